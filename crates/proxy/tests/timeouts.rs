//! Kong's (nginx's) meaning of a service's `write_timeout` and `read_timeout` for a request with a body
//! (issue 17, defect 5): each bounds the gap between two steps, not the whole exchange. An upload that keeps
//! moving is never cut, however long it takes; one that stops is.

mod common;

use common::Proxy;
use sluice_testkit::{EchoUpstream, SilentServer};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The route streams bodies (`request_buffering: false`): a buffering route reads the whole body before
/// the upstream is chosen, and the wait for the client is then `client_body_timeout`'s, not the service's.
fn config(url: &str) -> String {
    format!(
        "_format_version: \"3.0\"\nservices:\n- name: s\n  url: {url}\n  read_timeout: 400\n  write_timeout: 400\n  routes: [{{paths: [/], request_buffering: false}}]\n"
    )
}

/// Sends a chunked POST whose `chunks` chunks come `every` apart, then reads the status line.
async fn upload(proxy: &Proxy, chunks: usize, every: Duration) -> String {
    let mut s = tokio::net::TcpStream::connect(proxy.addr).await.unwrap();
    s.write_all(
        b"POST /up HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n",
    )
    .await
    .unwrap();
    for _ in 0..chunks {
        tokio::time::sleep(every).await;
        if s.write_all(b"4\r\nabcd\r\n").await.is_err() {
            break;
        }
    }
    let _ = s.write_all(b"0\r\n\r\n").await;
    let mut out = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut out)).await;
    let text = String::from_utf8_lossy(&out).into_owned();
    text.lines().next().unwrap_or_default().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_steady_upload_longer_than_both_timeouts_goes_through() {
    let up = EchoUpstream::start();
    let proxy = Proxy::start(&config(&up.url()));
    // 8 chunks 150 ms apart: 1.2 s in all, three times write_timeout + read_timeout's 0.8 s.
    let started = Instant::now();
    let status = upload(&proxy, 8, Duration::from_millis(150)).await;
    assert!(started.elapsed() > Duration::from_millis(1100));
    assert!(status.starts_with("HTTP/1.1 200"), "{status}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upload_that_stops_is_cut_after_the_gap() {
    let up = EchoUpstream::start();
    let proxy = Proxy::start(&config(&up.url()));
    let started = Instant::now();
    // One chunk, then nothing for 1.5 s.
    let status = upload(&proxy, 2, Duration::from_millis(1500)).await;
    assert!(status.starts_with("HTTP/1.1 504"), "{status}");
    assert!(started.elapsed() < Duration::from_millis(3500));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_that_never_answers_a_posted_body_times_out_after_read_timeout() {
    let silent = SilentServer::start();
    let proxy = Proxy::start(&config(&format!("http://127.0.0.1:{}", silent.port())));
    let started = Instant::now();
    let status = upload(&proxy, 1, Duration::from_millis(10)).await;
    assert!(status.starts_with("HTTP/1.1 504"), "{status}");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
}
