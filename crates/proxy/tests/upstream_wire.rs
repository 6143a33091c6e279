//! The gateway's own HTTP/1.1 client against scripted upstreams: every way a response body can be
//! delimited, interim responses, malformed answers, the exact bytes of the upstream request, and pooled
//! connections the upstream closed while they were idle.

mod common;

use common::{one_service, raw, Proxy};
use sluice_testkit::client;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// What a scripted upstream saw: connections accepted and the raw bytes of every request head and body.
#[derive(Default)]
struct Seen {
    connections: AtomicUsize,
    requests: Mutex<Vec<String>>,
}

/// Reads one request (head, then a body by content-length or chunked framing); None at EOF.
async fn read_request(stream: &mut tokio::net::TcpStream) -> Option<String> {
    let mut data = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let text = String::from_utf8_lossy(&data).into_owned();
        if let Some(end) = text.find("\r\n\r\n") {
            let head = text[..end].to_ascii_lowercase();
            let body = &text[end + 4..];
            let length = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length: "))
                .map(|n| n.trim().parse::<usize>().unwrap());
            let done = match length {
                Some(n) => body.len() >= n,
                None if head.contains("transfer-encoding: chunked") => body.ends_with("0\r\n\r\n"),
                None => true,
            };
            if done {
                return Some(text);
            }
        }
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => data.extend_from_slice(&buf[..n]),
        }
    }
}

/// An upstream answering every request with `response`; with `close_after_ms`, it closes each connection
/// that long after answering (an upstream keep-alive timeout).
async fn scripted(response: &'static [u8], close_after_ms: Option<u64>) -> (SocketAddr, Arc<Seen>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Arc::new(Seen::default());
    let s = seen.clone();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            s.connections.fetch_add(1, Ordering::SeqCst);
            let s = s.clone();
            tokio::spawn(async move {
                while let Some(req) = read_request(&mut stream).await {
                    s.requests.lock().unwrap().push(req);
                    if stream.write_all(response).await.is_err() {
                        return;
                    }
                    if let Some(ms) = close_after_ms {
                        tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
                        return;
                    }
                }
            });
        }
    });
    (addr, seen)
}

async fn proxy_to(response: &'static [u8]) -> (Proxy, Arc<Seen>) {
    let (addr, seen) = scripted(response, None).await;
    let proxy = Proxy::start(&one_service(&format!("http://{addr}"), &["paths: [/]"]));
    (proxy, seen)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_body_framing_reaches_the_client() {
    // (upstream response, body the client gets, connections used by two requests)
    let cases: [(&'static [u8], &str, usize); 5] = [
        (b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nhello", "hello", 1),
        (
            b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n3;ext=1\r\nhel\r\n2\r\nlo\r\n0\r\nx-trailer: t\r\n\r\n",
            "hello",
            1,
        ),
        (b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok", "ok", 1),
        (b"HTTP/1.1 204 No Content\r\ncontent-length: 7\r\n\r\n", "", 1),
        // Delimited by the upstream closing: the connection can't be used again.
        (b"HTTP/1.0 200 OK\r\n\r\nuntil close", "until close", 2),
    ];
    for (response, body, connections) in cases {
        let (addr, seen) = scripted(response, Some(0).filter(|_| connections == 2)).await;
        let proxy = Proxy::start(&one_service(&format!("http://{addr}"), &["paths: [/]"]));
        for _ in 0..2 {
            let resp = client().get(proxy.url("/")).send().await.unwrap();
            assert!(
                resp.status().is_success(),
                "{:?}",
                String::from_utf8_lossy(response)
            );
            assert_eq!(resp.text().await.unwrap(), body);
        }
        assert_eq!(
            seen.connections.load(Ordering::SeqCst),
            connections,
            "{body}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_head_request_reads_no_body_whatever_the_length_says() {
    let (proxy, seen) = proxy_to(b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\n").await;
    for _ in 0..2 {
        let resp = client().head(proxy.url("/")).send().await.unwrap();
        assert_eq!(resp.status(), 200);
        assert_eq!(resp.headers()["content-length"], "5");
    }
    assert_eq!(seen.connections.load(Ordering::SeqCst), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_answers_are_bad_gateway() {
    for response in [
        &b"garbage\r\n\r\n"[..],
        b"HTTP/1.1 200 OK\r\ncontent-length: 1\r\ncontent-length: 2\r\n\r\nx",
        b"HTTP/1.1 101 Switching Protocols\r\n\r\n",
        b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n",
    ] {
        let (proxy, _) = proxy_to(response).await;
        let resp = client().get(proxy.url("/")).send().await;
        let status = match resp {
            Ok(r) if r.status() == 200 => match r.bytes().await {
                Err(_) => 0, // the head was fine and the body broke: the client sees the failure
                Ok(b) => panic!("{b:?} passed through"),
            },
            Ok(r) => r.status().as_u16(),
            // The body broke before hyper flushed the head: the connection is cut.
            Err(_) => 0,
        };
        let body_broke = response.ends_with(b"zz\r\n");
        let expected = if body_broke { 0 } else { 502 };
        assert_eq!(status, expected, "{:?}", String::from_utf8_lossy(response));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_upstream_request_on_the_wire() {
    // The route streams bodies (`request_buffering: false`), so the client's chunked body stays chunked.
    let (addr, seen) = scripted(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n", None).await;
    let routes = ["paths: [/], request_buffering: false"];
    let proxy = Proxy::start(&one_service(&format!("http://{addr}"), &routes));
    let chunked = b"POST /p?q=1 HTTP/1.1\r\nhost: client.example\r\nconnection: close, x-gone\r\nx-gone: 1\r\nx-kept: 2\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n";
    let resp = raw(proxy.addr, chunked).await;
    assert!(resp.starts_with("HTTP/1.1 200"), "{resp}");
    let req = seen.requests.lock().unwrap()[0].clone();
    let (head, body) = req.split_once("\r\n\r\n").unwrap();
    let lines: Vec<&str> = head.split("\r\n").collect();
    assert_eq!(lines[0], "POST /p?q=1 HTTP/1.1");
    assert!(lines[1].starts_with("host: 127.0.0.1:"), "{head}");
    assert!(lines.contains(&"x-kept: 2"), "{head}");
    assert!(lines.contains(&"transfer-encoding: chunked"), "{head}");
    assert!(
        lines.contains(&"x-forwarded-host: client.example"),
        "{head}"
    );
    for gone in ["connection", "x-gone"] {
        assert!(!head.contains(&format!("{gone}:")), "{head}");
    }
    let decoded: String = body
        .split("\r\n")
        .collect::<Vec<_>>()
        .chunks(2)
        .filter_map(|c| c.get(1).copied())
        .collect();
    assert_eq!(decoded, "abcde", "{body:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_buffered_chunked_body_goes_upstream_with_its_length() {
    // Kong's default route buffers the body, and nginx then sends it with `Content-Length`.
    let (proxy, seen) = proxy_to(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n").await;
    let chunked = b"POST /p HTTP/1.1\r\nhost: c\r\nconnection: close\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n";
    let resp = raw(proxy.addr, chunked).await;
    assert!(resp.starts_with("HTTP/1.1 200"), "{resp}");
    let req = seen.requests.lock().unwrap()[0].clone();
    let (head, body) = req.split_once("\r\n\r\n").unwrap();
    let lines: Vec<&str> = head.split("\r\n").collect();
    assert!(lines.contains(&"content-length: 5"), "{head}");
    assert!(!head.contains("transfer-encoding"), "{head}");
    assert_eq!(body, "abcde");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pooled_connections_the_upstream_closed_are_not_used() {
    let (addr, seen) = scripted(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok", Some(20)).await;
    let proxy = Proxy::start(&one_service(&format!("http://{addr}"), &["paths: [/]"]));
    for i in 0..4 {
        let resp = client()
            .post(proxy.url("/"))
            .body("not replayable")
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200, "request {i}");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(seen.connections.load(Ordering::SeqCst), 4);
}
