//! The smuggling and strictness suite, differential against nginx (issue 17): every vector goes to Sluice
//! and to Debian's nginx (started here, proxying like Kong's template), each in front of its own raw-socket
//! upstream that records exactly what arrives. For each vector the client's statuses and the requests the
//! upstream received (method, target, body) must be the same, except for the differences listed in
//! [`KNOWN`] with their reasons.

use sluice_testkit::{Gateway, NginxPeer, Received, Recorder, Verdicts};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_sluice");

/// (name, raw bytes the client sends)
const VECTORS: &[(&str, &str)] = &[
    ("plain GET", "GET /a HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"),
    ("POST with Content-Length", "POST /a HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc"),
    ("POST chunked", "POST /a HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n3\r\nabc\r\n0\r\n\r\n"),
    // CL/TE conflicts
    ("two different Content-Length", "POST /a HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\nContent-Length: 4\r\nConnection: close\r\n\r\nabcd"),
    ("Content-Length list", "POST /a HTTP/1.1\r\nHost: t\r\nContent-Length: 3, 3\r\nConnection: close\r\n\r\nabc"),
    ("Content-Length with sign", "POST /a HTTP/1.1\r\nHost: t\r\nContent-Length: +3\r\nConnection: close\r\n\r\nabc"),
    ("negative Content-Length", "POST /a HTTP/1.1\r\nHost: t\r\nContent-Length: -1\r\nConnection: close\r\n\r\n"),
    ("TE gzip, chunked", "POST /a HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: gzip, chunked\r\nConnection: close\r\n\r\n3\r\nabc\r\n0\r\n\r\n"),
    ("TE chunked, chunked", "POST /a HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked, chunked\r\nConnection: close\r\n\r\n3\r\nabc\r\n0\r\n\r\n"),
    ("TE with space before colon", "POST /a HTTP/1.1\r\nHost: t\r\nTransfer-Encoding : chunked\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc"),
    ("TE in HTTP/1.0", "POST /a HTTP/1.0\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"),
    // Header grammar
    ("obs-fold", "GET /a HTTP/1.1\r\nHost: t\r\nX-A: 1\r\n 2\r\nConnection: close\r\n\r\n"),
    ("bare LF line ends", "GET /a HTTP/1.1\nHost: t\nConnection: close\n\n"),
    ("bare CR in a value", "GET /a HTTP/1.1\r\nHost: t\r\nX-A: 1\r2\r\nConnection: close\r\n\r\n"),
    ("NUL in a value", "GET /a HTTP/1.1\r\nHost: t\r\nX-A: 1\x002\r\nConnection: close\r\n\r\n"),
    ("space in a field name", "GET /a HTTP/1.1\r\nHost: t\r\nX A: 1\r\nConnection: close\r\n\r\n"),
    // Chunk grammar
    ("chunk size overflow", "POST /a HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\nffffffffffffffffff1\r\nabc\r\n0\r\n\r\n"),
    ("negative chunk size", "POST /a HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n-3\r\nabc\r\n0\r\n\r\n"),
    ("0x chunk size", "POST /a HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n0x3\r\nabc\r\n0\r\n\r\n"),
    ("chunk without CRLF after data", "POST /a HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n3\r\nabcX\r\n0\r\n\r\n"),
    ("bare LF in a chunk extension", "POST /a HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n3;a=b\nc\r\nabc\r\n0\r\n\r\n"),
    ("chunk extension", "POST /a HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n3;name=value\r\nabc\r\n0\r\n\r\n"),
    // Host rules
    ("no Host in HTTP/1.1", "GET /a HTTP/1.1\r\nConnection: close\r\n\r\n"),
    ("no Host in HTTP/1.0", "GET /a HTTP/1.0\r\n\r\n"),
    ("two Host fields", "GET /a HTTP/1.1\r\nHost: t\r\nHost: u\r\nConnection: close\r\n\r\n"),
    ("slash in Host", "GET /a HTTP/1.1\r\nHost: t/x\r\nConnection: close\r\n\r\n"),
    ("space in Host", "GET /a HTTP/1.1\r\nHost: t x\r\nConnection: close\r\n\r\n"),
    ("asterisk-form OPTIONS", "OPTIONS * HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"),
    ("asterisk-form GET", "GET * HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"),
    ("CONNECT", "CONNECT t:80 HTTP/1.1\r\nHost: t:80\r\nConnection: close\r\n\r\n"),
    ("absolute-form target", "GET http://other.test/a HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"),
    // Pipelining, Expect, versions
    ("two pipelined GETs", "GET /a HTTP/1.1\r\nHost: t\r\n\r\nGET /b HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"),
    ("smuggled request after Content-Length: 0", "POST /a HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"),
    ("Expect: 100-continue", "POST /a HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc"),
    ("HTTP/0.9", "GET /a\r\n\r\n"),
    ("HTTP/1.2", "GET /a HTTP/1.2\r\nHost: t\r\nConnection: close\r\n\r\n"),
    ("HTTP/2.0 over an HTTP/1 connection", "GET /a HTTP/2.0\r\nHost: t\r\nConnection: close\r\n\r\n"),
    ("lowercase method", "get /a HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"),
];

/// Vectors where Sluice and nginx may differ, with the reason. Each is refused by both or by Sluice
/// alone: none lets something through that nginx refuses.
const KNOWN: &[(&str, &str)] = &[
    ("HTTP/0.9", "Sluice's server does not speak HTTP/0.9 (400); nginx proxies it and answers without a status line"),
    ("HTTP/1.2", "Sluice's parser (httparse) takes HTTP/1.0 and 1.1 only (400); nginx reads 1.2 as 1.1"),
    ("HTTP/2.0 over an HTTP/1 connection", "400 from Sluice's parser; nginx says 505"),
];

/// What one proxy did with one vector.
#[derive(Debug, PartialEq, Eq)]
struct Outcome {
    /// The status of every response the client got, in order.
    statuses: Vec<u16>,
    /// What reached the upstream: (method, target, body).
    upstream: Vec<(String, String, String)>,
}

/// Sends `raw` on a new connection to `port`, reads until the proxy closes or is quiet for a while, and
/// collects what `recorder` received meanwhile.
fn exchange(port: u16, raw: &str, recorder: &Recorder) -> Outcome {
    recorder.take();
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    stream.write_all(raw.as_bytes()).expect("write");
    stream
        .set_read_timeout(Some(Duration::from_millis(300)))
        .expect("timeout");
    let started = Instant::now();
    let mut got = Vec::new();
    let mut buf = [0u8; 8192];
    while started.elapsed() < Duration::from_secs(3) {
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => break,
            Err(_) => break,
        }
    }
    std::thread::sleep(Duration::from_millis(50));
    Outcome {
        statuses: statuses(&got),
        upstream: recorder.take().into_iter().map(summary).collect(),
    }
}

fn summary(r: Received) -> (String, String, String) {
    (
        r.method,
        r.target,
        String::from_utf8_lossy(&r.body).into_owned(),
    )
}

/// The status codes of the responses in `bytes` (each `HTTP/1.x NNN` at a line start).
fn statuses(bytes: &[u8]) -> Vec<u16> {
    let text = String::from_utf8_lossy(bytes);
    let mut out = Vec::new();
    for (i, _) in text.match_indices("HTTP/1.") {
        if i > 0 && !text[..i].ends_with('\n') {
            continue;
        }
        if let Some(code) = text.get(i + 9..i + 12).and_then(|c| c.parse().ok()) {
            out.push(code);
        }
    }
    out
}

#[test]
fn sluice_and_nginx_agree_on_every_vector() {
    let (to_sluice, to_nginx) = (Recorder::start(), Recorder::start());
    let yaml = format!(
        "_format_version: \"3.0\"\nservices:\n- name: s\n  url: http://127.0.0.1:{}\n  routes:\n  - name: r\n    paths: [/]\n    preserve_host: true\n",
        to_sluice.port()
    );
    let gw = Gateway::builder(BIN).config_yaml(&yaml).start();
    let nginx = NginxPeer::start(to_nginx.port());
    let mut verdicts = Verdicts::default();
    for (name, raw) in VECTORS {
        let s = exchange(gw.proxy_port(), raw, &to_sluice);
        let n = exchange(nginx.port(), raw, &to_nginx);
        verdicts.record(name, &s, &n, KNOWN);
    }
    verdicts.assert_agree();
}
