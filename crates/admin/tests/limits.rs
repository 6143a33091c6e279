//! What a client can hold on the admin and status listeners (issue 17, defects 5 and 7): a request head
//! must arrive within the header timeout (also after a keep-alive response), a body over the limit is
//! refused from its `Content-Length` before it is read, and only one `POST /config` is read and parsed at a
//! time.

mod common;

use common::{start_with, TestNode};
use sluice_admin::ServeLimits;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const TIMEOUT: Duration = Duration::from_millis(300);

fn limits() -> ServeLimits {
    ServeLimits {
        header_timeout: TIMEOUT,
    }
}

async fn connect(url: &str) -> TcpStream {
    TcpStream::connect(url.trim_start_matches("http://"))
        .await
        .expect("connect")
}

/// Reads until the server closes; returns what it sent and how long it took (None: still open after 5 s).
async fn until_closed(stream: &mut TcpStream) -> (String, Option<Duration>) {
    let started = Instant::now();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match tokio::time::timeout(Duration::from_secs(5), stream.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => {
                return (
                    String::from_utf8_lossy(&got).into(),
                    Some(started.elapsed()),
                )
            }
            Ok(Ok(n)) => got.extend_from_slice(&buf[..n]),
            Err(_) => return (String::from_utf8_lossy(&got).into(), None),
        }
    }
}

#[tokio::test]
async fn silent_trickling_and_idle_clients_are_closed_on_both_listeners() {
    let s = start_with(TestNode::new(), limits()).await;
    for base in [s.admin_url(""), s.status_url("")] {
        // Connected, never a byte.
        let mut silent = connect(&base).await;
        let (_, closed) = until_closed(&mut silent).await;
        assert!(
            closed.is_some_and(|d| d < Duration::from_secs(3)),
            "{base}: silent client kept"
        );

        // A head that never ends.
        let mut trickle = connect(&base).await;
        trickle
            .write_all(b"GET /status HTTP/1.1\r\nHost: x\r\n")
            .await
            .unwrap();
        let (_, closed) = until_closed(&mut trickle).await;
        assert!(closed.is_some(), "{base}: trickling client kept");

        // One request answered, then idle on keep-alive.
        let mut idle = connect(&base).await;
        idle.write_all(b"GET /status HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        let (answer, closed) = until_closed(&mut idle).await;
        assert!(answer.starts_with("HTTP/1.1 200"), "{base}: {answer}");
        assert!(closed.is_some(), "{base}: idle keep-alive client kept");
    }
}

#[tokio::test]
async fn an_oversized_body_is_refused_before_it_is_read() {
    let s = start_with(TestNode::new(), ServeLimits::default()).await;
    let mut stream = connect(&s.admin_url("")).await;
    let head = "POST /config HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\
                Content-Length: 1000000000\r\n\r\n";
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(b"{\"_format_version\"").await.unwrap();
    let mut buf = vec![0u8; 4096];
    let n = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut buf))
        .await
        .expect("answered without the body")
        .unwrap();
    let answer = String::from_utf8_lossy(&buf[..n]);
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert!(answer.contains("request body too large"), "{answer}");
}

#[tokio::test]
async fn one_config_post_at_a_time_per_listener() {
    let s = start_with(TestNode::new(), ServeLimits::default()).await;
    // The first POST sends its head and part of its body, and holds.
    let mut first = connect(&s.admin_url("")).await;
    let body = "{\"_format_version\": \"3.0\"}";
    let head = format!(
        "POST /config HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    first.write_all(head.as_bytes()).await.unwrap();
    first.write_all(&body.as_bytes()[..5]).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let post = || {
        common::client()
            .post(s.admin_url("/config"))
            .header("content-type", "application/json")
            .body(body)
            .send()
    };
    assert_eq!(post().await.expect("post").status(), 429);
    // The first completes and loads; after it, a POST is admitted again.
    first.write_all(&body.as_bytes()[5..]).await.unwrap();
    let mut buf = vec![0u8; 4096];
    let n = first.read(&mut buf).await.unwrap();
    let answer = String::from_utf8_lossy(&buf[..n]);
    assert!(answer.starts_with("HTTP/1.1 201"), "{answer}");
    assert_eq!(post().await.expect("post").status(), 201);
}
