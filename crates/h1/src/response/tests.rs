use bytes::BytesMut;
use http::{StatusCode, Version};

use super::*;

/// Parses `raw` whole and expects a complete head.
pub(super) fn parse(raw: &str, head_request: bool) -> Result<ResponseHead, ParseError> {
    let mut buf = BytesMut::from(raw.as_bytes());
    parse_response(&mut buf, head_request).map(|h| h.expect("complete head"))
}

#[test]
fn status_version_and_headers() {
    let raw = "HTTP/1.1 404 Not Found\r\nX-A: 1\r\nx-a: 2\r\nContent-Length: 0\r\nX-Empty:\r\n\r\n";
    let head = parse(raw, false).unwrap();
    assert_eq!(head.status, StatusCode::NOT_FOUND);
    assert_eq!(head.version, Version::HTTP_11);
    let map = head.fields.to_map();
    let xa: Vec<_> = map.get_all("x-a").iter().collect();
    assert_eq!(xa, ["1", "2"]);
    assert_eq!(map["x-empty"], "");
    assert_eq!(map.len(), 4);
    assert_eq!(head.fields.get("X-a"), Some(&b"1"[..]));
    let head = parse("HTTP/1.0 500\r\n\r\n", false).unwrap();
    assert_eq!(
        (head.status.as_u16(), head.version),
        (500, Version::HTTP_10)
    );
    let head = parse("HTTP/1.1 200 \r\n\r\n", false).unwrap();
    assert_eq!(head.status, StatusCode::OK);
}

#[test]
fn malformed() {
    let cases = [
        "HTTP/2.0 200 OK\r\n\r\n",
        "HTTP/1.2 200 OK\r\n\r\n",
        "HTTP/1.1 200OK\r\n\r\n",
        "HTTP/1.1 20 OK\r\n\r\n",
        "HTTP/1.1 099 OK\r\n\r\n",
        "HTTP/1.1 2000 OK\r\n\r\n",
        "HTTP/1.1 abc OK\r\n\r\n",
        "HTTP/1.1  200 OK\r\n\r\n",
        "HTTPS/1.1 200 OK\r\n\r\n",
        "http/1.1 200 OK\r\n\r\n",
        "HTTP/1.1 200 OK\r\nX-Folded: a\r\n b\r\n\r\n",
        "HTTP/1.1 200 OK\r\nBad Name: a\r\n\r\n",
        "HTTP/1.1 200 OK\r\nX-A : a\r\n\r\n",
        "HTTP/1.1 200 OK\r\n: a\r\n\r\n",
        "HTTP/1.1 200 OK\r\nX-A: a\0b\r\n\r\n",
        "HTTP/1.1 200 OK\r\nX-A\r\n\r\n",
    ];
    for raw in cases {
        let mut buf = BytesMut::from(raw.as_bytes());
        assert_eq!(
            parse_response(&mut buf, false).unwrap_err(),
            ParseError::Malformed,
            "{raw:?}"
        );
    }
}

#[test]
fn every_prefix_is_incomplete() {
    let raw = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\n";
    for len in 0..raw.len() {
        let mut buf = BytesMut::from(&raw.as_bytes()[..len]);
        assert!(
            parse_response(&mut buf, false).unwrap().is_none(),
            "prefix {len}"
        );
        assert_eq!(buf.len(), len, "an incomplete parse consumes nothing");
    }
    assert!(parse(raw, false).is_ok());
}

#[test]
fn body_bytes_stay_in_buffer() {
    let mut buf = BytesMut::from(&b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhelloHTTP/1.1"[..]);
    let head = parse_response(&mut buf, false).unwrap().unwrap();
    assert_eq!(head.framing, Framing::Length(5));
    assert_eq!(&buf[..], b"helloHTTP/1.1");
}

#[test]
fn interim_then_final() {
    let mut buf = BytesMut::from(
        &b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"[..],
    );
    let first = parse_response(&mut buf, false).unwrap().unwrap();
    assert_eq!(
        (first.status, first.framing),
        (StatusCode::CONTINUE, Framing::Empty)
    );
    let second = parse_response(&mut buf, false).unwrap().unwrap();
    assert_eq!(
        (second.status, second.framing),
        (StatusCode::OK, Framing::Length(0))
    );
    assert!(buf.is_empty());
}

#[test]
fn values_share_the_read_buffer() {
    let mut buf = BytesMut::with_capacity(256);
    buf.extend_from_slice(b"HTTP/1.1 200 OK\r\nX: some-value\r\nX-Custom-Name: other\r\n\r\nbody");
    let range = buf.as_ptr() as usize..buf.as_ptr() as usize + buf.len();
    let head = parse_response(&mut buf, false).unwrap().unwrap();
    let map = head.fields.to_map();
    for name in ["x", "x-custom-name"] {
        let p = map[name].as_bytes().as_ptr() as usize;
        assert!(range.contains(&p), "{name} value was copied");
    }
    assert!(
        range.contains(&(buf.as_ptr() as usize)),
        "body bytes stay in place"
    );
}

/// A head with `n` fields `X-<i>: <i>` and a zero Content-Length.
fn many_fields(n: usize) -> String {
    let mut raw = String::from("HTTP/1.1 200 OK\r\n");
    for i in 0..n - 1 {
        raw.push_str(&format!("X-{i}: {i}\r\n"));
    }
    raw + "Content-Length: 0\r\n\r\n"
}

#[test]
fn header_count_limits() {
    for n in [63, 64, 65, 200, 256] {
        let head = parse(&many_fields(n), false).unwrap_or_else(|e| panic!("{n}: {e}"));
        assert_eq!(head.fields.len(), n);
        assert_eq!(head.framing, Framing::Length(0));
        assert_eq!(head.fields.to_map()["x-60"], "60");
    }
    assert_eq!(
        parse(&many_fields(257), false).unwrap_err(),
        ParseError::TooManyHeaders
    );
    // The many-field path also reports an incomplete head as such.
    let raw = many_fields(100);
    let mut buf = BytesMut::from(&raw.as_bytes()[..raw.len() - 1]);
    assert!(parse_response(&mut buf, false).unwrap().is_none());
}

#[test]
fn head_size_limit() {
    let filler = "x".repeat(1000);
    let mut raw = String::from("HTTP/1.1 200 OK\r\n");
    while raw.len() < MAX_HEAD_BYTES {
        raw.push_str(&format!("X-Fill: {filler}\r\n"));
    }
    let mut buf = BytesMut::from(raw.as_bytes());
    assert_eq!(
        parse_response(&mut buf, false).unwrap_err(),
        ParseError::TooLarge
    );
    // Complete but over the limit is too large as well.
    raw.push_str("\r\n");
    assert_eq!(parse(&raw, false).unwrap_err(), ParseError::TooLarge);
    // Just under the limit is fine, even with more bytes after it.
    let mut raw = String::from("HTTP/1.1 200 OK\r\nContent-Length: 0\r\nX-Pad: ");
    let pad = MAX_HEAD_BYTES - raw.len() - 4;
    raw.push_str(&"p".repeat(pad));
    raw.push_str("\r\n\r\n");
    assert_eq!(raw.len(), MAX_HEAD_BYTES);
    raw.push_str("trailing data");
    let mut buf = BytesMut::from(raw.as_bytes());
    assert!(parse_response(&mut buf, false).unwrap().is_some());
    assert_eq!(&buf[..], b"trailing data");
    // An incomplete head under the limit asks for more.
    let mut buf = BytesMut::from(&raw.as_bytes()[..MAX_HEAD_BYTES - 1]);
    assert!(parse_response(&mut buf, false).unwrap().is_none());
    // Exactly at the limit without a complete head is too large.
    let mut buf = BytesMut::from(&raw.as_bytes()[..MAX_HEAD_BYTES - 2]);
    buf.extend_from_slice(b"pp");
    assert_eq!(
        parse_response(&mut buf, false).unwrap_err(),
        ParseError::TooLarge
    );
}

#[test]
fn errors_display() {
    for e in [
        ParseError::Malformed,
        ParseError::TooLarge,
        ParseError::TooManyHeaders,
        ParseError::BadContentLength,
    ] {
        assert!(!e.to_string().is_empty());
    }
}
