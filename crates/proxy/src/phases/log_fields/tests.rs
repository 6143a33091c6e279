//! The upstream's fields rendered from their bytes give the record the same bytes as the map's way, for
//! heads that take either way (a wrongly taken shortcut would show here as a different record).

use super::*;
use crate::respond::Timings;
use crate::settings::HeaderSettings;
use bytes::BytesMut;
use sluice_plugins::logging::response_headers::ResponseHeaders;
use std::time::Duration;

fn parsed(fields: &[u8]) -> ResponseFields {
    let mut raw = b"HTTP/1.1 200 OK\r\n".to_vec();
    raw.extend_from_slice(fields);
    raw.extend_from_slice(b"\r\n");
    let mut buf = BytesMut::from(&raw[..]);
    sluice_h1::parse_response(&mut buf, false)
        .unwrap()
        .unwrap()
        .fields
}

fn kong() -> KongHeaders {
    let timings = Timings {
        proxy: Duration::from_millis(1),
        upstream: Duration::from_millis(2),
    };
    KongHeaders::new(HeaderSettings::default(), timings, 200, [b'a'; 32])
}

/// The record's `response.headers` and header bytes, and whether a `Server` came, rendered by `way`.
fn rendered(
    fields: &ResponseFields,
    way: fn(&mut Members, &ResponseFields, &KongHeaders) -> bool,
) -> (String, usize, bool) {
    let late = kong();
    let mut members = ResponseHeaders::open(fields.len());
    let server = way(&mut members, fields, &late);
    late.log_members(&mut members, server);
    let headers = members.close();
    let mut out = Vec::new();
    headers.write(&mut out);
    (
        String::from_utf8(out).unwrap(),
        headers.fields_size(),
        server,
    )
}

#[test]
fn as_received_renders_what_the_map_way_renders() {
    let many: String = (0..20).map(|i| format!("x-f{i}: {i}\r\n")).collect();
    let heads: Vec<&[u8]> = vec![
        b"",
        b"content-length: 2\r\ndate: Sat, 28 Nov 2026 12:17:30 GMT\r\n",
        b"Content-Type: text/plain\r\nX-Up: \"q\" \\ \t tab\r\nServer: up\r\n",
        b"X-Odd: caf\xe9\r\n",
        b"set-cookie: a=1\r\nx: 1\r\nSet-Cookie: b=2\r\n",
        b"Vary: a\r\nvary: b\r\n",
        b"connection: x-a\r\nx-a: 1\r\nkeep-alive: 5\r\nte: trailers\r\nx-b: 2\r\n",
        b"te: gzip\r\nUpgrade: h2c\r\nTrailer: x\r\n",
        b"x-kong-upstream-latency: 9\r\nX-Kong-Other: 1\r\nx-c: 3\r\n",
        b"transfer-encoding: chunked\r\ncontent-length: 5\r\n",
        b"content-length: 5\r\nserver: up\r\nx-kong-request-id: b\r\n",
        many.as_bytes(),
    ];
    for head in heads {
        let fields = parsed(head);
        let (fast, slow) = (rendered(&fields, members), rendered(&fields, by_map));
        assert_eq!(fast, slow, "{}", String::from_utf8_lossy(head));
    }
}

/// The common head is rendered from its bytes (no map), so the comparison above tests that way too.
#[test]
fn plain_heads_take_the_bytes_way() {
    let plain = parsed(b"content-length: 2\r\nDate: x\r\nX-A: 1\r\n");
    assert!(as_received(&plain));
    for head in [
        &b"x-a: 1\r\nX-A: 2\r\n"[..],
        b"connection: close\r\n",
        b"keep-alive: 5\r\n",
        b"te: trailers\r\n",
        b"x-kong-upstream-latency: 1\r\n",
    ] {
        assert!(
            !as_received(&parsed(head)),
            "{}",
            String::from_utf8_lossy(head)
        );
    }
}
