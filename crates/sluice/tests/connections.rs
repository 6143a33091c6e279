//! Client connections through the real binary: nginx's `keepalive_timeout` and `client_header_timeout`
//! (Kong's `nginx_http_*` settings) close idle connections each at its own limit, keep-alive can be
//! turned off, and `nginx_events_worker_connections` bounds a worker's connections (one more is closed at
//! once, and a freed slot is used again); `client_body_timeout` and `send_timeout` are read under their
//! `nginx_http_*` and `nginx_proxy_*` names.

use sluice_testkit::{EchoUpstream, Gateway};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_sluice");

fn gateway(up: &EchoUpstream, env: &[(&str, &str)]) -> Gateway {
    let mut b = Gateway::builder(BIN).workers(1).config_yaml(&format!(
        "_format_version: \"3.0\"\nservices:\n- name: s\n  url: {}\n  routes:\n  - name: r\n    paths: [/]\n",
        up.url()
    ));
    for (k, v) in env {
        b = b.env(k, v);
    }
    b.start()
}

fn connect(gw: &Gateway) -> TcpStream {
    let s = TcpStream::connect(("127.0.0.1", gw.proxy_port())).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s
}

/// Sends a GET and reads until the response's head and body (by Content-Length) are in; returns the head.
fn get(s: &mut TcpStream) -> String {
    s.write_all(b"GET /x HTTP/1.1\r\nHost: t\r\n\r\n").unwrap();
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let n = s.read(&mut chunk).unwrap();
        assert!(n > 0, "closed before the response ended");
        buf.extend_from_slice(&chunk[..n]);
        let text = String::from_utf8_lossy(&buf).to_string();
        if let Some(end) = text.find("\r\n\r\n") {
            let head = text[..end].to_ascii_lowercase();
            let length: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .map_or(0, |v| v.trim().parse().unwrap());
            if buf.len() >= end + 4 + length {
                return head;
            }
        }
    }
}

/// How long until the gateway closes `s` (reads EOF or a reset), at most `limit`; None if still open.
fn closed_within(s: &mut TcpStream, limit: Duration) -> Option<Duration> {
    let start = Instant::now();
    s.set_read_timeout(Some(limit)).unwrap();
    let mut byte = [0u8; 1];
    match s.read(&mut byte) {
        Ok(0) => Some(start.elapsed()),
        Ok(_) => panic!("unexpected bytes from the gateway"),
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ) =>
        {
            None
        }
        Err(_) => Some(start.elapsed()),
    }
}

#[test]
fn an_idle_keep_alive_connection_gets_the_keepalive_timeout_and_a_silent_new_one_the_header_timeout(
) {
    let up = EchoUpstream::start();
    let gw = gateway(
        &up,
        &[
            ("SLUICE_NGINX_HTTP_KEEPALIVE_TIMEOUT", "1s"),
            ("SLUICE_NGINX_HTTP_CLIENT_HEADER_TIMEOUT", "4s"),
        ],
    );
    let mut served = connect(&gw);
    let mut silent = connect(&gw);
    assert!(get(&mut served).starts_with("http/1.1 200"));
    let idle = closed_within(&mut served, Duration::from_secs(3))
        .expect("an idle keep-alive connection outlived keepalive_timeout (1 s) by 2 s");
    assert!(
        idle >= Duration::from_millis(700),
        "closed after {idle:?}, before its keepalive_timeout"
    );
    // The silent one has had ~1-3 s: under its 4 s header timeout it stays, then it is closed.
    assert!(
        closed_within(&mut silent, Duration::from_millis(500)).is_none(),
        "a silent new connection got the keep-alive limit"
    );
    assert!(
        closed_within(&mut silent, Duration::from_secs(5)).is_some(),
        "a silent connection outlived client_header_timeout"
    );
}

#[test]
fn keepalive_timeout_zero_turns_keep_alive_off() {
    let up = EchoUpstream::start();
    let gw = gateway(&up, &[("SLUICE_NGINX_HTTP_KEEPALIVE_TIMEOUT", "0")]);
    let mut s = connect(&gw);
    let head = get(&mut s);
    assert!(head.contains("connection: close"), "{head}");
    assert!(closed_within(&mut s, Duration::from_secs(2)).is_some());
}

#[test]
fn a_worker_keeps_at_most_worker_connections_and_closes_one_more_at_once() {
    let up = EchoUpstream::start();
    let gw = gateway(&up, &[("SLUICE_NGINX_EVENTS_WORKER_CONNECTIONS", "2")]);
    let mut first = connect(&gw);
    let mut second = connect(&gw);
    assert!(get(&mut first).starts_with("http/1.1 200"));
    assert!(get(&mut second).starts_with("http/1.1 200"));
    let mut third = connect(&gw);
    assert!(
        closed_within(&mut third, Duration::from_secs(2)).is_some(),
        "a third connection was kept with worker_connections = 2"
    );
    assert!(
        gw.log().contains("worker_connections are not enough"),
        "{}",
        gw.log()
    );
    drop(first);
    // The freed slot serves a new client (the close is seen by the worker within a moment).
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let mut again = connect(&gw);
        again
            .write_all(b"GET /x HTTP/1.1\r\nHost: t\r\n\r\n")
            .unwrap();
        let mut byte = [0u8; 1];
        if matches!(again.read(&mut byte), Ok(1)) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the freed slot was never used again"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        get(&mut second).starts_with("http/1.1 200"),
        "the kept connection still serves"
    );
}

#[test]
fn bad_connection_settings_are_refused_with_their_names() {
    let prefix = tempfile::tempdir().unwrap();
    for (name, value) in [
        ("SLUICE_NGINX_HTTP_KEEPALIVE_TIMEOUT", "soon"),
        ("SLUICE_NGINX_EVENTS_WORKER_CONNECTIONS", "0"),
    ] {
        let mut child = std::process::Command::new(BIN)
            .arg("start")
            .env(name, value)
            .env("SLUICE_PREFIX", prefix.path())
            .env("SLUICE_PROXY_LISTEN", "127.0.0.1:0")
            .env("SLUICE_ADMIN_LISTEN", "127.0.0.1:0")
            .env("SLUICE_STATUS_LISTEN", "127.0.0.1:0")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while child.try_wait().unwrap().is_none() {
            if Instant::now() > deadline {
                child.kill().unwrap();
                panic!("{name}={value} was accepted: the node started");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let out = child.wait_with_output().unwrap();
        let text = String::from_utf8_lossy(&out.stderr).to_string();
        assert!(!out.status.success(), "{name}={value} was accepted");
        assert!(
            text.contains(&name["SLUICE_".len()..].to_ascii_lowercase()),
            "{text}"
        );
    }
}

#[test]
fn the_body_and_send_timeouts_are_read_from_kongs_names() {
    let up = EchoUpstream::start();
    let gw = gateway(
        &up,
        &[
            ("SLUICE_NGINX_HTTP_CLIENT_BODY_TIMEOUT", "30s"),
            // The proxy server block's name wins over the http block's, as in nginx.
            ("SLUICE_NGINX_PROXY_CLIENT_BODY_TIMEOUT", "500ms"),
            ("SLUICE_NGINX_HTTP_SEND_TIMEOUT", "500ms"),
        ],
    );
    let mut s = connect(&gw);
    let started = Instant::now();
    s.write_all(b"POST /x HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\nab")
        .unwrap();
    let mut answer = String::new();
    let _ = s.read_to_string(&mut answer);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    // A client that reads nothing of a large response is closed after the send timeout: what it reads
    // afterwards is what the socket buffers held, then the end.
    let mut slow = connect(&gw);
    slow.write_all(b"GET /x HTTP/1.1\r\nHost: t\r\nx-echo-body-size: 100000000\r\n\r\n")
        .unwrap();
    std::thread::sleep(Duration::from_secs(3));
    let mut got = Vec::new();
    let _ = slow.read_to_end(&mut got);
    assert!(got.len() < 50_000_000, "{} bytes", got.len());
}
