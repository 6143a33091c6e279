//! Request-head limits by size, as nginx has them (issue 17, defect 9): many small header lines pass, a
//! head over the byte limit is refused.

mod common;

use common::{one_service, raw, Proxy};
use sluice_testkit::EchoUpstream;

fn head_with(lines: usize, line_len: usize) -> Vec<u8> {
    let mut head = b"GET /api HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n".to_vec();
    for i in 0..lines {
        let value = "v".repeat(line_len);
        head.extend_from_slice(format!("x-h{i}: {value}\r\n").as_bytes());
    }
    head.extend_from_slice(b"\r\n");
    head
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_header_lines_pass_and_a_huge_head_is_refused() {
    let up = EchoUpstream::start();
    let proxy = Proxy::start(&one_service(&up.url(), &["paths: [/api]"]));
    // 150 lines (hyper's default limit is 100 fields) in 3 KB: nginx takes them.
    let answer = raw(proxy.addr, &head_with(150, 8)).await;
    assert!(
        answer.starts_with("HTTP/1.1 200"),
        "{}",
        &answer[..answer.len().min(200)]
    );
    assert!(answer.contains("x-h149"), "the upstream got every line");
    // 900 short lines still fit in the byte limit.
    let answer = raw(proxy.addr, &head_with(900, 8)).await;
    assert!(
        answer.starts_with("HTTP/1.1 200"),
        "{}",
        &answer[..answer.len().min(200)]
    );
    // A head over the byte limit is refused.
    let answer = raw(proxy.addr, &head_with(100, 1000)).await;
    assert!(
        answer.starts_with("HTTP/1.1 431"),
        "{}",
        &answer[..answer.len().min(200)]
    );
}
