//! The upstream's fields written from their bytes give the client the same head as the map's way
//! (`to_map`, hop-by-hop removal, the writer's loop), names aside, which keep the upstream's case.

use super::super::write::{head, Facts};
use crate::respond::{KongHeaders, LateHeaders, Timings};
use crate::settings::HeaderSettings;
use bytes::BytesMut;
use http::{HeaderName, HeaderValue};
use http_body::SizeHint;
use sluice_plugins::AddedHeaders;
use std::time::Duration;

fn parsed(status: &str, fields: &str) -> sluice_h1::ResponseHead {
    let raw = format!("HTTP/1.1 {status}\r\n{fields}\r\n");
    let mut buf = BytesMut::from(raw.as_bytes());
    sluice_h1::parse_response(&mut buf, false).unwrap().unwrap()
}

fn late(added: &AddedHeaders, upstream: Option<sluice_h1::ResponseFields>) -> LateHeaders {
    let timings = Timings {
        proxy: Duration::from_millis(1),
        upstream: Duration::from_millis(2),
    };
    LateHeaders {
        kong: KongHeaders::new(HeaderSettings::default(), timings, 200, [b'a'; 32]),
        added: added.clone(),
        upstream,
    }
}

/// The head written both ways: (the raw way's text, its fields lower-cased, the map way's fields); the
/// `Date` the writer adds when the upstream sent none is left out of both.
fn both(status: &str, fields: &str, added: &AddedHeaders) -> (String, Vec<String>, Vec<String>) {
    let facts = Facts {
        head_request: false,
        http10: false,
        keep_alive: true,
    };
    let hint = SizeHint::with_exact(2);
    let lines = |out: Vec<u8>, lower: bool| -> (String, Vec<String>) {
        let text = String::from_utf8(out).unwrap();
        let kept = text
            .split("\r\n")
            .skip(1)
            .filter(|l| !l.is_empty() && !l.starts_with("date: ") || l.starts_with("date: up"))
            .map(|l| match lower {
                true => {
                    let (n, v) = l.split_once(": ").unwrap();
                    format!("{}: {v}", n.to_ascii_lowercase())
                }
                false => l.to_string(),
            })
            .collect();
        (text, kept)
    };
    let raw_head = parsed(status, fields);
    let parts = http::Response::builder()
        .status(raw_head.status)
        .body(())
        .unwrap()
        .into_parts()
        .0;
    let mut out = Vec::new();
    head(
        &mut out,
        &parts,
        Some(&late(added, Some(raw_head.fields))),
        &hint,
        facts,
    );
    let (text, raw) = lines(out, true);

    let map_head = parsed(status, fields);
    let mut parts = parts;
    parts.headers = map_head.fields.to_map();
    sluice_upstream::forward::strip_hop_by_hop(&mut parts.headers);
    let mut out = Vec::new();
    head(&mut out, &parts, Some(&late(added, None)), &hint, facts);
    (text, raw, lines(out, false).1)
}

#[test]
fn written_from_the_bytes_or_from_the_map_the_head_is_the_same() {
    let mut rate = AddedHeaders::new();
    rate.insert(
        HeaderName::from_static("ratelimit-limit"),
        HeaderValue::from_static("5"),
    );
    rate.insert(
        HeaderName::from_static("x-foo"),
        HeaderValue::from_static("plugin"),
    );
    let none = AddedHeaders::new();
    let cases = [
        ("200 OK", "Content-Length: 2\r\nDate: up\r\n", &none),
        ("200 OK", "Content-Length: 2\r\nX-A: 1\r\n", &none),
        (
            "200 OK",
            "Connection: close, X-Foo\r\nX-Foo: a\r\nKeep-Alive: timeout=5\r\nContent-Length: 2\r\nX-Bar: b\r\n",
            &none,
        ),
        ("200 OK", "Transfer-Encoding: chunked\r\nContent-Length: 5\r\nX-A: 1\r\n", &none),
        ("200 OK", "X-Kong-Upstream-Latency: 999\r\nX-Kong-Other: 1\r\nContent-Length: 2\r\n", &none),
        ("200 OK", "Server: up/1\r\nContent-Length: 2\r\n", &none),
        ("200 OK", "TE: trailers\r\nContent-Length: 2\r\n", &none),
        ("200 OK", "TE: gzip\r\nUpgrade: h2c\r\nTrailer: x\r\nProxy-Authenticate: y\r\n", &none),
        ("204 No Content", "Content-Length: 2\r\nX-A: 1\r\n", &none),
        ("200 OK", "X-A:1\r\nContent-Length:  2\r\nX-B: 2 \r\n", &none),
        ("200 OK", "X-Foo: upstream\r\nRateLimit-Limit: 9\r\nContent-Length: 2\r\nDate: up\r\n", &rate),
        ("200 OK", "Content-Length: 2\r\n", &rate),
        ("200 OK", "", &none),
    ];
    for (status, fields, added) in cases {
        let (text, raw, map) = both(status, fields, added);
        assert_eq!(raw, map, "{fields:?}\n{text}");
    }
}

#[test]
fn a_head_with_nothing_to_drop_is_copied_as_it_came() {
    let (text, ..) = both(
        "200 OK",
        "Content-Length: 2\r\nDate: up\r\nX-Custom-Name: 1\r\n",
        &AddedHeaders::new(),
    );
    assert!(
        text.starts_with(
            "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nDate: up\r\nX-Custom-Name: 1\r\n"
        ),
        "{text}"
    );
    let (text, ..) = both(
        "200 OK",
        "Keep-Alive: timeout=5\r\nX-Custom-Name: 1\r\n",
        &AddedHeaders::new(),
    );
    assert!(
        text.starts_with("HTTP/1.1 200 OK\r\nX-Custom-Name: 1\r\n"),
        "{text}"
    );
}
