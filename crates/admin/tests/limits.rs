//! What a client can hold on the admin and status listeners (issue 17, defects 5 and 7): a request head
//! must arrive within the header timeout (also after a keep-alive response), a body over the limit is
//! refused from its `Content-Length` before it is read and cut off while it streams without one, only one
//! `POST /config` is read and parsed at a time, a client that stops reading a response is closed after
//! the send timeout, and a document nested too deep or expanding too much is refused with a clear error.

mod common;

use common::{start_with, TestNode};
use sluice_admin::ServeLimits;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const TIMEOUT: Duration = Duration::from_millis(300);

fn limits() -> ServeLimits {
    ServeLimits {
        header_timeout: TIMEOUT,
        body_timeout: TIMEOUT,
        send_timeout: TIMEOUT,
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

/// Reads one response head and as much body as came with it (up to 4 KB), within 30 s.
async fn answer(stream: &mut (impl AsyncReadExt + Unpin)) -> String {
    let mut buf = vec![0u8; 4096];
    let n = tokio::time::timeout(Duration::from_secs(30), stream.read(&mut buf))
        .await
        .expect("answered")
        .unwrap();
    String::from_utf8_lossy(&buf[..n]).into()
}

/// Kong's 413 (its error handler's wording), as JSON.
fn is_kong_413(answer: &str) -> bool {
    answer.starts_with("HTTP/1.1 413") && answer.ends_with("{\"message\":\"Payload too large\"}")
}

/// A body that stops coming gets 408 after `client_body_timeout` and the connection closes (nginx's
/// `client_body_timeout`); one that keeps coming is read whole.
#[tokio::test]
async fn a_stalled_body_gets_408_and_the_connection_closes() {
    let s = start_with(TestNode::new(), limits()).await;
    let mut stream = connect(&s.admin_url("")).await;
    stream
        .write_all(b"POST /config HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"_format")
        .await
        .unwrap();
    let (got, took) = until_closed(&mut stream).await;
    assert!(got.starts_with("HTTP/1.1 408"), "{got}");
    let took = took.expect("closed");
    assert!(took >= TIMEOUT && took < TIMEOUT * 5, "{took:?}");
}

#[tokio::test]
async fn an_oversized_body_is_refused_before_it_is_read() {
    let s = start_with(TestNode::new(), ServeLimits::default()).await;
    // POST /config over 64 MiB; any other body (here a schema validation) over Kong's 10 MiB.
    for (path, length) in [
        ("/config", 1_000_000_000),
        ("/schemas/services/validate", 11 << 20),
    ] {
        let mut stream = connect(&s.admin_url("")).await;
        let head = format!(
            "POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\
             Content-Length: {length}\r\n\r\n"
        );
        stream.write_all(head.as_bytes()).await.unwrap();
        stream.write_all(b"{\"_format_version\"").await.unwrap();
        let answer = answer(&mut stream).await;
        assert!(is_kong_413(&answer), "{path}: {answer}");
    }
}

#[tokio::test]
async fn a_streamed_body_is_cut_off_where_it_crosses_the_limit() {
    let s = start_with(TestNode::new(), ServeLimits::default()).await;
    let (mut read, mut write) = connect(&s.admin_url("")).await.into_split();
    let sent = Arc::new(AtomicUsize::new(0));
    let counted = sent.clone();
    // 200 MiB in chunks of 1 MiB, with no Content-Length to refuse it by.
    let writer = tokio::spawn(async move {
        let head = "POST /config HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\
                    Transfer-Encoding: chunked\r\n\r\n";
        write.write_all(head.as_bytes()).await?;
        let chunk = format!("100000\r\n{}\r\n", " ".repeat(1 << 20));
        for _ in 0..200 {
            write.write_all(chunk.as_bytes()).await?;
            counted.fetch_add(1 << 20, Ordering::Relaxed);
        }
        Ok::<_, std::io::Error>(())
    });
    let answer = answer(&mut read).await;
    assert!(is_kong_413(&answer), "{answer}");
    // The server stopped reading at the limit: what the writer got out is the limit and what the
    // sockets' buffers hold, never the whole body.
    tokio::time::sleep(Duration::from_millis(500)).await;
    writer.abort();
    let sent = sent.load(Ordering::Relaxed);
    assert!(
        (63 << 20..128 << 20).contains(&sent),
        "{} MiB sent",
        sent >> 20
    );
}

#[tokio::test]
async fn deep_nesting_and_expanding_aliases_are_refused_with_a_clear_error() {
    let s = start_with(TestNode::new(), ServeLimits::default()).await;
    let deep_json = format!(
        "{{\"_format_version\": \"3.0\", \"x\": {}{}}}",
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    let deep_flow = format!("_format_version: \"3.0\"\nx: {}", "{a: ".repeat(100_000));
    let deep_block: String = (0..200).map(|i| format!("{}a:\n", " ".repeat(i))).collect();
    let mut laughs = String::from(
        "_format_version: \"3.0\"\nl0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n",
    );
    for i in 1..10 {
        let alias = format!("*l{}, ", i - 1).repeat(9);
        laughs.push_str(&format!("l{i}: &l{i} [{}]\n", alias.trim_end_matches(", ")));
    }
    for (body, reason) in [
        (deep_json, "nested deeper than 100"),
        (deep_flow, "nested deeper than 100"),
        (deep_block, "nested deeper than 100"),
        (laughs, "too much memory"),
    ] {
        let (status, answer) = common::send(
            common::client()
                .post(s.admin_url("/config"))
                .header("content-type", "application/x-yaml")
                .body(body),
        )
        .await;
        assert_eq!(status, 400, "{answer}");
        let error = answer["fields"]["error"].as_str().unwrap_or_default();
        assert!(
            error.starts_with("failed parsing declarative configuration: ")
                && error.contains(reason),
            "{answer}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_stops_reading_a_response_is_closed_after_the_send_timeout() {
    // A plugin whose config is larger than the sockets between server and client hold.
    const SIZE: usize = 24 << 20;
    let yaml = format!(
        "_format_version: \"3.0\"\nplugins:\n- name: request-termination\n  config:\n    body: {}\n",
        "x".repeat(SIZE)
    );
    let s = start_with(TestNode::loaded(&yaml), limits()).await;
    let mut stalled = connect(&s.admin_url("")).await;
    stalled
        .write_all(b"GET /plugins HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    // Waits for the response to start (building 24 MB of JSON takes a while on a loaded machine), then reads
    // nothing for a while, then all it can.
    let mut head = [0u8; 12];
    stalled.read_exact(&mut head).await.unwrap();
    tokio::time::sleep(TIMEOUT * 6).await;
    let (rest, closed) = until_closed(&mut stalled).await;
    let got = String::from_utf8_lossy(&head).into_owned() + &rest;
    assert!(
        got.starts_with("HTTP/1.1 200"),
        "{}",
        &got[..got.len().min(200)]
    );
    assert!(closed.is_some(), "a client that stopped reading is kept");
    assert!(
        got.len() < SIZE,
        "the whole response was sent: {} bytes",
        got.len()
    );
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
