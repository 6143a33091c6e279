use crate::response::tests::parse;
use crate::{Framing, ParseError};

use Framing::{Chunked, Empty, Length, UntilClose};

const GET: bool = false;
const HEAD: bool = true;

/// (request, `HTTP/<status line>`, header fields joined by `|`, framing, keep_alive)
#[rustfmt::skip]
const CASES: &[(bool, &str, &str, Framing, bool)] = &[
    // Rule 1: no body whatever the headers say.
    (HEAD, "1.1 200 OK", "Content-Length: 5", Empty, true),
    (HEAD, "1.1 200 OK", "Transfer-Encoding: chunked", Empty, true),
    (GET, "1.1 100 Continue", "", Empty, true),
    (GET, "1.1 103 Early Hints", "Link: </a>", Empty, true),
    (GET, "1.1 101 Switching Protocols", "Upgrade: x", Empty, true),
    (GET, "1.1 204 No Content", "Content-Length: 7", Empty, true),
    (GET, "1.1 304 Not Modified", "Content-Length: 7", Empty, true),
    (GET, "1.1 304 Not Modified", "Content-Length: x", Empty, true),
    (GET, "1.1 204 No Content", "Transfer-Encoding: chunked|Content-Length: 1", Empty, false),
    // Rule 2: Transfer-Encoding.
    (GET, "1.1 200 OK", "Transfer-Encoding: chunked", Chunked, true),
    (GET, "1.1 200 OK", "Transfer-Encoding: CHUNKED", Chunked, true),
    (GET, "1.1 200 OK", "Transfer-Encoding: gzip, chunked", Chunked, true),
    (GET, "1.1 200 OK", "Transfer-Encoding: gzip|Transfer-Encoding: chunked", Chunked, true),
    (GET, "1.1 200 OK", "Transfer-Encoding: chunked|Transfer-Encoding: gzip", UntilClose, false),
    (GET, "1.1 200 OK", "Transfer-Encoding: chunked, gzip", UntilClose, false),
    (GET, "1.1 200 OK", "Transfer-Encoding: gzip", UntilClose, false),
    (GET, "1.1 200 OK", "Transfer-Encoding: chunked|Content-Length: 5", Chunked, false),
    (GET, "1.1 200 OK", "Content-Length: 5|Transfer-Encoding: chunked", Chunked, false),
    (GET, "1.1 200 OK", "Content-Length: x|Transfer-Encoding: chunked", Chunked, false),
    (GET, "1.0 200 OK", "Transfer-Encoding: chunked|Connection: keep-alive", UntilClose, false),
    // Rule 3: Content-Length.
    (GET, "1.1 200 OK", "Content-Length: 5", Length(5), true),
    (GET, "1.1 200 OK", "Content-Length: 0", Length(0), true),
    (
        GET,
        "1.1 200 OK",
        "Content-Length: 5|Content-Length: 5",
        Length(5),
        true,
    ),
    (GET, "1.1 200 OK", "Content-Length: 5,5", Length(5), true),
    (GET, "1.1 200 OK", "Content-Length:  5 ", Length(5), true),
    // Rule 4: until close.
    (GET, "1.1 200 OK", "", UntilClose, false),
    (GET, "1.1 404 Not Found", "Content-Type: text/plain", UntilClose, false),
    // Keep-alive.
    (
        GET,
        "1.1 200 OK",
        "Connection: close|Content-Length: 1",
        Length(1),
        false,
    ),
    (
        GET,
        "1.1 200 OK",
        "Connection: foo, Close|Content-Length: 1",
        Length(1),
        false,
    ),
    (
        GET,
        "1.1 200 OK",
        "Connection: foo|Connection: CLOSE|Content-Length: 1",
        Length(1),
        false,
    ),
    (
        GET,
        "1.1 200 OK",
        "Connection: closed|Content-Length: 1",
        Length(1),
        true,
    ),
    (
        GET,
        "1.1 200 OK",
        "Connection: keep-alive|Content-Length: 1",
        Length(1),
        true,
    ),
    (GET, "1.0 200 OK", "Content-Length: 1", Length(1), false),
    (
        GET,
        "1.0 200 OK",
        "Connection: Keep-Alive|Content-Length: 1",
        Length(1),
        true,
    ),
    (
        GET,
        "1.0 200 OK",
        "Connection: foo, keep-alive|Content-Length: 1",
        Length(1),
        true,
    ),
    (
        GET,
        "1.0 200 OK",
        "Connection: keep-alive, close|Content-Length: 1",
        Length(1),
        false,
    ),
    (GET, "1.0 200 OK", "Connection: keep-alive", UntilClose, false),
    (GET, "1.0 204 No Content", "Connection: keep-alive", Empty, true),
    (HEAD, "1.0 200 OK", "Connection: keep-alive|Content-Length: 3", Empty, true),
];

/// The head `HTTP/<line>` with `fields` (joined by `|`).
fn head(line: &str, fields: &str) -> String {
    let mut raw = format!("HTTP/{line}\r\n");
    for field in fields.split('|').filter(|f| !f.is_empty()) {
        raw.push_str(field);
        raw.push_str("\r\n");
    }
    raw + "\r\n"
}

#[test]
fn framing_and_keep_alive() {
    for (req, line, fields, framing, keep_alive) in CASES {
        let got =
            parse(&head(line, fields), *req).unwrap_or_else(|e| panic!("{line} {fields}: {e}"));
        let want = (*framing, *keep_alive);
        assert_eq!(
            (got.framing, got.keep_alive),
            want,
            "HEAD={req} {line} {fields}"
        );
    }
}

#[test]
fn bad_content_length() {
    let cases = [
        "Content-Length: 5|Content-Length: 6",
        "Content-Length: 5|Content-Length: x",
        "Content-Length: +5",
        "Content-Length: -1",
        "Content-Length:",
        "Content-Length: 5,6",
        "Content-Length: 5 5",
        "Content-Length: 0x10",
        "Content-Length: 99999999999999999999",
    ];
    for fields in cases {
        let got = parse(&head("1.1 200 OK", fields), GET).unwrap_err();
        assert_eq!(got, ParseError::BadContentLength, "{fields:?}");
    }
}

/// A head with both Transfer-Encoding and Content-Length loses the length: the body is framed by the
/// coding, and a forwarded length would cut or stall the client's copy (RFC 9112 §6.3).
#[test]
fn transfer_encoding_removes_content_length() {
    for fields in [
        "Transfer-Encoding: chunked|Content-Length: 5",
        "Content-Length: 5|Transfer-Encoding: chunked",
        "Content-Length: 5|Transfer-Encoding: gzip",
    ] {
        let got = parse(&head("1.1 200 OK", fields), GET).unwrap();
        assert!(got.fields.length_dropped(), "{fields}");
        assert!(
            !got.fields.to_map().contains_key("content-length"),
            "{fields}"
        );
    }
    let got = parse(&head("1.1 200 OK", "Content-Length: 5"), GET).unwrap();
    assert!(!got.fields.length_dropped());
    assert_eq!(got.fields.to_map()["content-length"], "5");
}
