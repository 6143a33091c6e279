//! Request and response buffering through the real binary, as Kong's route fields `request_buffering` and
//! `response_buffering` ask of nginx.
//! - Requests: a route that buffers (the default) reaches its upstream only once the client's body is
//!   whole, and sends it with its length; a route that turns it off streams the body as it comes. Bodies
//!   over `client_body_buffer_size` pass through a temporary file that leaves nothing behind, and
//!   `client_max_body_size` refuses larger bodies with 413 either way.
//! - Responses: a route that buffers (the default) reads a large response whole from its upstream while
//!   the client reads nothing; a route that turns it off, or a response marked `X-Accel-Buffering: no`,
//!   makes the upstream wait for the client.

use sluice_testkit::{Gateway, Recorder};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_sluice");

/// Two routes to `port`: `/buffered` (Kong's default) and `/streamed` (no request or response buffering).
fn gateway_to(port: u16, env: &[(&str, &str)]) -> Gateway {
    let config = format!(
        "_format_version: \"3.0\"\nservices:\n- name: s\n  url: http://127.0.0.1:{port}\n  routes:\n  \
         - name: buffered\n    paths: [/buffered]\n    strip_path: false\n  - name: streamed\n    \
         paths: [/streamed]\n    strip_path: false\n    request_buffering: false\n    \
         response_buffering: false\n",
    );
    let mut b = Gateway::builder(BIN).workers(1).config_yaml(&config);
    for (k, v) in env {
        b = b.env(k, v);
    }
    b.start()
}

fn gateway(rec: &Recorder, env: &[(&str, &str)]) -> Gateway {
    gateway_to(rec.port(), env)
}

/// Reads one response off `s` (head and a `Content-Length` body); returns its status and body.
fn response(s: &mut TcpStream) -> (u16, String) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let n = s.read(&mut chunk).expect("read the response");
        assert!(
            n > 0,
            "closed before the response: {:?}",
            String::from_utf8_lossy(&buf)
        );
        buf.extend_from_slice(&chunk[..n]);
        let text = String::from_utf8_lossy(&buf).to_string();
        let Some(end) = text.find("\r\n\r\n") else {
            continue;
        };
        let head = text[..end].to_ascii_lowercase();
        let length: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .map_or(0, |v| v.trim().parse().unwrap());
        if buf.len() >= end + 4 + length {
            let status = head[9..12].parse().unwrap();
            return (status, text[end + 4..end + 4 + length].to_string());
        }
    }
}

fn connect(gw: &Gateway) -> TcpStream {
    let s = TcpStream::connect(("127.0.0.1", gw.proxy_port())).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s
}

/// A chunked POST of `pieces`, `gap` apart; returns when its last byte left, and the response.
fn slow_chunked_post(
    gw: &Gateway,
    path: &str,
    pieces: &[&[u8]],
    gap: Duration,
) -> (Instant, (u16, String)) {
    let mut s = connect(gw);
    let head = format!("POST {path} HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n");
    s.write_all(head.as_bytes()).unwrap();
    for p in pieces {
        std::thread::sleep(gap);
        s.write_all(format!("{:x}\r\n", p.len()).as_bytes())
            .unwrap();
        s.write_all(p).unwrap();
        s.write_all(b"\r\n").unwrap();
    }
    std::thread::sleep(gap);
    // Taken before the last chunk is written: the upstream may see the request before this thread is
    // scheduled again after the write (the gateway forwards it at once), and the test must not race that.
    let last = Instant::now();
    s.write_all(b"0\r\n\r\n").unwrap();
    (last, response(&mut s))
}

/// A POST with `Content-Length`, or chunked in 16 KiB chunks, of `body`; returns the response.
fn post(gw: &Gateway, path: &str, body: &[u8], chunked: bool) -> (u16, String) {
    let mut s = connect(gw);
    if chunked {
        let head = format!("POST {path} HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n");
        s.write_all(head.as_bytes()).unwrap();
        for c in body.chunks(16 * 1024) {
            s.write_all(format!("{:x}\r\n", c.len()).as_bytes())
                .unwrap();
            s.write_all(c).unwrap();
            s.write_all(b"\r\n").unwrap();
        }
        s.write_all(b"0\r\n\r\n").unwrap();
    } else {
        let head = format!(
            "POST {path} HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\n\r\n",
            body.len()
        );
        s.write_all(head.as_bytes()).unwrap();
        // The gateway may answer 413 before reading the body, and close.
        let _ = s.write_all(body);
    }
    response(&mut s)
}

#[test]
fn a_buffering_route_reaches_its_upstream_once_the_body_is_whole_and_sends_its_length() {
    let rec = Recorder::start();
    let gw = gateway(&rec, &[]);
    let gap = Duration::from_millis(300);
    let (last, (status, _)) = slow_chunked_post(&gw, "/buffered", &[b"abc", b"def"], gap);
    assert_eq!(status, 200);
    let arrived = rec.take_arrivals();
    assert_eq!(arrived.len(), 1);
    assert!(
        arrived[0] >= last,
        "the upstream got the request {:?} before the client's last byte",
        last - arrived[0]
    );
    let seen = rec.take();
    assert_eq!(seen[0].body, b"abcdef");
    assert_eq!(seen[0].header("content-length"), ["6"]);
    assert!(seen[0].header("transfer-encoding").is_empty());
}

#[test]
fn a_route_without_buffering_streams_the_body_as_it_comes() {
    let rec = Recorder::start();
    let gw = gateway(&rec, &[]);
    let gap = Duration::from_millis(300);
    let (last, (status, _)) = slow_chunked_post(&gw, "/streamed", &[b"abc", b"def"], gap);
    assert_eq!(status, 200);
    let arrived = rec.take_arrivals();
    assert!(
        arrived[0] + gap <= last,
        "the upstream waited for the whole body on a streaming route"
    );
    let seen = rec.take();
    assert_eq!(seen[0].body, b"abcdef");
    assert_eq!(seen[0].header("transfer-encoding"), ["chunked"]);
}

#[test]
fn a_body_larger_than_the_memory_buffer_goes_through_a_file_that_leaves_nothing_behind() {
    let rec = Recorder::start();
    let gw = gateway(&rec, &[("SLUICE_NGINX_HTTP_CLIENT_BODY_BUFFER_SIZE", "1k")]);
    let body: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    for chunked in [false, true] {
        assert_eq!(post(&gw, "/buffered", &body, chunked).0, 200);
        let seen = rec.take();
        assert!(
            seen[0].body == body,
            "the body changed on the way (chunked: {chunked})"
        );
        assert_eq!(seen[0].header("content-length"), ["300000"]);
    }
    let temp = gw.prefix().join("client_body_temp");
    assert!(temp.is_dir(), "no {}", temp.display());
    assert_eq!(std::fs::read_dir(&temp).unwrap().count(), 0);
}

#[test]
fn client_max_body_size_refuses_larger_bodies_with_413_buffered_or_not() {
    let rec = Recorder::start();
    let gw = gateway(&rec, &[("SLUICE_NGINX_HTTP_CLIENT_MAX_BODY_SIZE", "1k")]);
    let (small, large) = (vec![b'a'; 1024], vec![b'a'; 1025]);
    for path in ["/buffered", "/streamed"] {
        for chunked in [false, true] {
            let (status, body) = post(&gw, path, &large, chunked);
            assert_eq!(status, 413, "{path} chunked: {chunked}");
            assert!(body.contains("Payload too large"), "{body}");
            assert_eq!(post(&gw, path, &small, chunked).0, 200, "{path}");
        }
    }
    // A buffered body over the limit never reached the upstream; a declared length was refused unread.
    let bodies: Vec<usize> = rec.take().iter().map(|r| r.body.len()).collect();
    assert_eq!(
        bodies.iter().filter(|n| **n == 1024).count(),
        4,
        "{bodies:?}"
    );
    assert!(!bodies.contains(&1025), "{bodies:?}");
}

/// The large response: far more than the sockets between upstream, gateway and client hold.
const BIG: usize = 48 * 1024 * 1024;

/// An upstream that answers every request with `BIG` bytes (byte i is `i % 251`), marked
/// `X-Accel-Buffering: no` when the path has `accel=no`, and reports when it has written the whole
/// response (or could not).
fn big_upstream() -> (u16, std::sync::mpsc::Receiver<Instant>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for mut conn in listener.incoming().flatten() {
            let tx = tx.clone();
            std::thread::spawn(move || {
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") {
                    if conn.read(&mut byte).unwrap_or(0) == 0 {
                        return;
                    }
                    head.push(byte[0]);
                }
                let accel = if String::from_utf8_lossy(&head).contains("accel=no") {
                    "x-accel-buffering: no\r\n"
                } else {
                    ""
                };
                let answer = format!("HTTP/1.1 200 OK\r\ncontent-length: {BIG}\r\n{accel}\r\n");
                let body: Vec<u8> = (0..BIG).map(|i| (i % 251) as u8).collect();
                if conn.write_all(answer.as_bytes()).is_ok() && conn.write_all(&body).is_ok() {
                    let _ = tx.send(Instant::now());
                }
            });
        }
    });
    (port, rx)
}

/// Sends a GET and reads only the response's first bytes.
fn get_and_stall(gw: &Gateway, path: &str) -> TcpStream {
    let mut s = connect(gw);
    s.write_all(format!("GET {path} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes())
        .unwrap();
    let mut first = [0u8; 12];
    s.read_exact(&mut first).unwrap();
    assert_eq!(&first, b"HTTP/1.1 200");
    s
}

/// Reads the rest of the response on `s` and checks its body is the upstream's, whole.
fn read_big(mut s: TcpStream) {
    let mut rest = Vec::with_capacity(BIG + 1024);
    let mut chunk = vec![0u8; 1 << 16];
    loop {
        let n = s.read(&mut chunk).unwrap();
        assert!(n > 0, "closed after {} bytes", rest.len());
        rest.extend_from_slice(&chunk[..n]);
        if let Some(end) = rest.windows(4).position(|w| w == b"\r\n\r\n") {
            if rest.len() >= end + 4 + BIG {
                let body = &rest[end + 4..];
                assert_eq!(body.len(), BIG);
                assert!(body.iter().enumerate().all(|(i, b)| *b == (i % 251) as u8));
                return;
            }
        }
    }
}

#[test]
fn a_buffering_route_reads_a_large_response_whole_while_the_client_reads_nothing() {
    let (port, sent) = big_upstream();
    let gw = gateway_to(port, &[]);
    let client = get_and_stall(&gw, "/buffered");
    let done = sent.recv_timeout(Duration::from_secs(20));
    assert!(
        done.is_ok(),
        "the upstream still waits for a client that does not read"
    );
    read_big(client);
    let temp = gw.prefix().join("proxy_temp");
    assert!(temp.is_dir(), "no {}", temp.display());
    assert_eq!(std::fs::read_dir(&temp).unwrap().count(), 0);
}

#[test]
fn a_streaming_route_or_x_accel_buffering_no_makes_the_upstream_wait_for_the_client() {
    let (port, sent) = big_upstream();
    let gw = gateway_to(port, &[]);
    for path in ["/streamed", "/buffered?accel=no"] {
        let client = get_and_stall(&gw, path);
        assert!(
            sent.recv_timeout(Duration::from_secs(2)).is_err(),
            "{path}: the upstream sent everything to a client that read nothing"
        );
        read_big(client);
        sent.recv_timeout(Duration::from_secs(10))
            .expect("the upstream finished once the client read");
    }
}
