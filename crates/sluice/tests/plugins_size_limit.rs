//! request-size-limiting through the real binary: `Content-Length` in each unit, Kong's 413, 417 (for
//! `Expect: 100-continue`) and 411 (`require_content_length`), and chunked bodies counted while they
//! stream: one over the limit is refused before the client has finished sending it.

use serde_json::Value;
use sluice_testkit::{client, EchoUpstream, Gateway};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_sluice");

const EXCEEDED: &str = r#"{"message":"Request size limit exceeded"}"#;

fn config(port: u16) -> String {
    format!(
        r#"_format_version: "3.0"
services:
- name: s
  url: http://127.0.0.1:{port}
  routes:
  - name: bytes
    paths: [/bytes]
    plugins:
    - {{name: request-size-limiting, config: {{allowed_payload_size: 100, size_unit: bytes}}}}
  - name: kilobytes
    paths: [/kb]
    plugins:
    - {{name: request-size-limiting, config: {{allowed_payload_size: 1, size_unit: kilobytes}}}}
  - name: megabytes
    paths: [/mb]
    plugins:
    - {{name: request-size-limiting, config: {{allowed_payload_size: 1}}}}
  - name: required
    paths: [/required]
    plugins:
    - {{name: request-size-limiting, config: {{allowed_payload_size: 100, size_unit: bytes, require_content_length: true}}}}
"#
    )
}

/// Writes `head` then each of `chunks` (already framed) on a fresh connection, then reads what comes back
/// within 5 s: the status line and the body after the head.
fn raw(port: u16, head: &str, chunks: &[Vec<u8>]) -> (String, String) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(head.as_bytes()).unwrap();
    for c in chunks {
        // The gateway may already have answered and closed: later writes may fail.
        if s.write_all(c).is_err() {
            break;
        }
    }
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(_) => break,
        }
        let text = String::from_utf8_lossy(&out);
        if let Some((head, body)) = final_response(&text).split_once("\r\n\r\n") {
            let length = head
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("content-length: ")
                        .map(str::to_string)
                })
                .and_then(|v| v.trim().parse::<usize>().ok());
            if length.is_some_and(|n| body.len() >= n) {
                break;
            }
        }
    }
    let text = String::from_utf8_lossy(&out).into_owned();
    let text = final_response(&text);
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((text, ""));
    (
        head.lines().next().unwrap_or("").to_string(),
        body.to_string(),
    )
}

/// The response after any `100 Continue`.
fn final_response(mut text: &str) -> &str {
    while text.starts_with("HTTP/1.1 100") {
        text = text.split_once("\r\n\r\n").map_or("", |(_, rest)| rest);
    }
    text
}

fn chunk(len: usize) -> Vec<u8> {
    let mut c = format!("{len:x}\r\n").into_bytes();
    c.extend(std::iter::repeat_n(b'a', len));
    c.extend_from_slice(b"\r\n");
    c
}

async fn post(url: String, body: Vec<u8>) -> (u16, String) {
    let resp = client().post(url).body(body).send().await.unwrap();
    (resp.status().as_u16(), resp.text().await.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn content_length_in_each_unit() {
    let up = EchoUpstream::start();
    let gw = Gateway::builder(BIN)
        .config_yaml(&config(up.port()))
        .start();
    let url = |p: &str| gw.proxy_url(p);
    assert_eq!(post(url("/bytes"), vec![b'a'; 100]).await.0, 200);
    assert_eq!(
        post(url("/bytes"), vec![b'a'; 101]).await,
        (413, EXCEEDED.into())
    );
    assert_eq!(post(url("/kb"), vec![b'a'; 1024]).await.0, 200);
    assert_eq!(
        post(url("/kb"), vec![b'a'; 1025]).await,
        (413, EXCEEDED.into())
    );
    assert_eq!(post(url("/mb"), vec![b'a'; 1 << 20]).await.0, 200);
    assert_eq!(post(url("/mb"), vec![b'a'; (1 << 20) + 1]).await.0, 413);
    assert_eq!(up.requests(), 3, "refused bodies never reach the upstream");

    // A client that waits for 100 Continue gets 417 at once, before sending its body.
    let port = gw.proxy_port();
    let head =
        "POST /bytes HTTP/1.1\r\nHost: x\r\nContent-Length: 101\r\nExpect: 100-continue\r\n\r\n";
    let (status, body) = tokio::task::spawn_blocking(move || raw(port, head, &[]))
        .await
        .unwrap();
    assert!(status.starts_with("HTTP/1.1 417"), "{status}");
    assert_eq!(body, EXCEEDED);

    // require_content_length: a request with neither a length nor chunked framing is refused (411);
    // chunked passes and is counted.
    let (status, text) = get(url("/required")).await;
    assert_eq!(
        (status, text.as_str()),
        (
            411,
            r#"{"message":"A valid Content-Length header is required"}"#
        )
    );
    let head = "POST /required HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";
    let chunks = [chunk(60), chunk(40), b"0\r\n\r\n".to_vec()];
    let (status, body) = tokio::task::spawn_blocking(move || raw(port, head, &chunks))
        .await
        .unwrap();
    assert!(status.starts_with("HTTP/1.1 200"), "{status}");
    let echo: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(echo["body_len"], 100);
    assert_eq!(post(url("/required"), vec![b'a'; 10]).await.0, 200);
}

async fn get(url: String) -> (u16, String) {
    let resp = client().get(url).send().await.unwrap();
    (resp.status().as_u16(), resp.text().await.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chunked_bodies_are_counted_while_they_stream() {
    let up = EchoUpstream::start();
    let gw = Gateway::builder(BIN)
        .config_yaml(&config(up.port()))
        .start();
    let port = gw.proxy_port();
    let head = |path: &str| {
        format!("POST {path} HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
    };

    // Within the limit, to the byte: proxied whole.
    let chunks = [chunk(50), chunk(50), b"0\r\n\r\n".to_vec()];
    let h = head("/bytes");
    let (status, body) = tokio::task::spawn_blocking(move || raw(port, &h, &chunks))
        .await
        .unwrap();
    assert!(status.starts_with("HTTP/1.1 200"), "{status}");
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap()["body_len"],
        100
    );

    // One byte over: Kong's 413.
    let chunks = [chunk(50), chunk(51), b"0\r\n\r\n".to_vec()];
    let h = head("/bytes");
    let (status, body) = tokio::task::spawn_blocking(move || raw(port, &h, &chunks))
        .await
        .unwrap();
    assert!(status.starts_with("HTTP/1.1 413"), "{status}");
    assert_eq!(body, EXCEEDED);

    // 1 MB and one byte against 1 MB, and the body never ends: the answer comes while the client is still
    // sending, so the gateway counted it as it streamed instead of waiting for (and holding) all of it.
    let mut chunks: Vec<Vec<u8>> = (0..16).map(|_| chunk(64 * 1024)).collect();
    chunks.push(chunk(1));
    let h = head("/mb");
    let (status, body) = tokio::task::spawn_blocking(move || raw(port, &h, &chunks))
        .await
        .unwrap();
    assert!(status.starts_with("HTTP/1.1 413"), "{status}");
    assert_eq!(body, EXCEEDED);

    // With Expect: 100-continue, the answer to a streamed body over the limit is 417.
    let h = "POST /kb HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nExpect: 100-continue\r\n\r\n";
    let chunks = [chunk(1000), chunk(100)];
    let (status, body) = tokio::task::spawn_blocking(move || raw(port, h, &chunks))
        .await
        .unwrap();
    assert!(status.contains(" 417"), "{status}: {body}");
}
