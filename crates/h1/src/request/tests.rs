//! Request heads: the framing table (nginx's answers), keep-alive, targets, limits and partial input.

use super::*;

fn parse(raw: &[u8]) -> Result<Option<RequestHead>, RequestError> {
    parse_request(&mut BytesMut::from(raw), HeadLimits::default())
}

fn head(raw: &str) -> RequestHead {
    parse(raw.as_bytes()).expect("valid").expect("complete")
}

#[test]
fn a_plain_get_has_no_body_and_keeps_the_connection() {
    let mut buf = BytesMut::from(&b"GET /a?b=1 HTTP/1.1\r\nHost: t\r\n\r\nGET /next"[..]);
    let h = parse_request(&mut buf, HeadLimits::default())
        .unwrap()
        .unwrap();
    assert_eq!(h.method, Method::GET);
    assert_eq!(h.uri, "/a?b=1");
    assert_eq!(h.version, Version::HTTP_11);
    assert_eq!(h.headers["host"], "t");
    assert_eq!(h.framing, RequestFraming::Length(0));
    assert!(h.keep_alive && !h.expect_continue && !h.upgrade);
    assert_eq!(&buf[..], b"GET /next", "the pipelined bytes stay");
}

#[test]
fn framing_follows_nginx() {
    let cases: &[(&str, Result<RequestFraming, RequestError>)] = &[
        ("Content-Length: 3", Ok(RequestFraming::Length(3))),
        ("Transfer-Encoding: chunked", Ok(RequestFraming::Chunked)),
        ("Transfer-Encoding: Chunked ", Ok(RequestFraming::Chunked)),
        (
            "Content-Length: 3\r\nContent-Length: 3",
            Err(RequestError::Malformed),
        ),
        (
            "Content-Length: 3\r\nContent-Length: 4",
            Err(RequestError::Malformed),
        ),
        ("Content-Length: 3, 3", Err(RequestError::Malformed)),
        ("Content-Length: +3", Err(RequestError::Malformed)),
        ("Content-Length: -1", Err(RequestError::Malformed)),
        (
            "Content-Length: 99999999999999999999999",
            Err(RequestError::Malformed),
        ),
        (
            "Content-Length: 4\r\nTransfer-Encoding: chunked",
            Err(RequestError::Malformed),
        ),
        (
            "Transfer-Encoding: gzip, chunked",
            Err(RequestError::UnknownCoding),
        ),
        (
            "Transfer-Encoding: chunked, chunked",
            Err(RequestError::UnknownCoding),
        ),
        (
            "Transfer-Encoding: identity",
            Err(RequestError::UnknownCoding),
        ),
        (
            "Transfer-Encoding: chunked\r\nTransfer-Encoding: gzip",
            Err(RequestError::UnknownCoding),
        ),
    ];
    for (fields, want) in cases {
        let raw = format!("POST / HTTP/1.1\r\nHost: t\r\n{fields}\r\n\r\n");
        let got = parse(raw.as_bytes()).map(|h| h.unwrap().framing);
        assert_eq!(&got, want, "{fields:?}");
    }
    let te10 = parse(b"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n");
    assert_eq!(
        te10.unwrap_err(),
        RequestError::Malformed,
        "HTTP/1.0 has no transfer codings"
    );
}

#[test]
fn keep_alive_by_version_and_connection() {
    assert!(!head("GET / HTTP/1.1\r\nConnection: close\r\n\r\n").keep_alive);
    assert!(!head("GET / HTTP/1.0\r\n\r\n").keep_alive);
    assert!(head("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n").keep_alive);
    let h = head("POST / HTTP/1.1\r\nExpect: 100-continue\r\nUpgrade: websocket\r\nContent-Length: 1\r\n\r\n");
    assert!(h.expect_continue && h.upgrade);
    assert!(!head("POST / HTTP/1.0\r\nExpect: 100-continue\r\n\r\n").expect_continue);
}

#[test]
fn bad_syntax_is_refused() {
    for raw in [
        &b"GET /a HTTP/1.1\r\nX-A: 1\r\n 2\r\n\r\n"[..],
        b"GET /a HTTP/1.1\r\nX-A: 1\r2\r\n\r\n",
        b"GET /a HTTP/1.1\r\nX A: 1\r\n\r\n",
        b"GET /a HTTP/1.1\r\nX-A: 1\x002\r\n\r\n",
        b"GET /a HTTP/1.2\r\n\r\n",
        b"GET /a\r\n\r\n",
        b"GET a b HTTP/1.1\r\n\r\n",
    ] {
        assert_eq!(
            parse(raw).unwrap_err(),
            RequestError::Malformed,
            "{:?}",
            String::from_utf8_lossy(raw)
        );
    }
}

#[test]
fn targets_outside_ascii_are_percent_encoded() {
    let h = parse(b"GET /\xfc\x80x?q=\xaf HTTP/1.1\r\n\r\n")
        .unwrap()
        .unwrap();
    assert_eq!(h.uri, "/%FC%80x?q=%AF");
    assert_eq!(
        head("GET http://a.test:8/p HTTP/1.1\r\n\r\n")
            .uri
            .authority()
            .unwrap(),
        "a.test:8"
    );
    assert_eq!(head("OPTIONS * HTTP/1.1\r\n\r\n").uri, "*");
}

#[test]
fn partial_heads_wait_and_limits_refuse_by_size_as_nginx() {
    assert!(parse(b"GET / HTTP/1.1\r\nHost: t\r\n").unwrap().is_none());
    // The request line: one buffer (8k), complete or not.
    let line = |n: usize| format!("GET /{} HTTP/1.1\r\n", "a".repeat(n));
    assert_eq!(
        parse(line(9000).as_bytes()).unwrap_err(),
        RequestError::UriTooLong
    );
    assert_eq!(
        parse(line(9000).trim_end().as_bytes()).unwrap_err(),
        RequestError::UriTooLong
    );
    assert_eq!(
        parse(format!("{}\r\n", line(8000)).as_bytes())
            .unwrap()
            .unwrap()
            .uri
            .path()
            .len(),
        8001
    );
    // A field line: one buffer too.
    let field = |n: usize| format!("GET / HTTP/1.1\r\nCookie: {}\r\n\r\n", "c".repeat(n));
    assert_eq!(
        parse(field(8200).as_bytes()).unwrap_err(),
        RequestError::TooLarge
    );
    assert!(parse(field(8000).as_bytes()).unwrap().is_some());
    // The whole head: all four buffers.
    let mut big = String::from("GET / HTTP/1.1\r\n");
    for i in 0..5 {
        big.push_str(&format!("X-{i}: {}\r\n", "v".repeat(7000)));
    }
    big.push_str("\r\n");
    assert_eq!(parse(big.as_bytes()).unwrap_err(), RequestError::TooLarge);
    // No limit on the count of fields but their size: nginx takes 300 short ones.
    let mut many = String::from("GET / HTTP/1.1\r\n");
    for i in 0..300 {
        many.push_str(&format!("X-{i}: v\r\n"));
    }
    many.push_str("\r\n");
    assert_eq!(head(&many).headers.len(), 300);
    let small = HeadLimits {
        line: 64,
        total: 128,
    };
    let got = parse_request(
        &mut BytesMut::from(&b"GET / HTTP/1.1\r\nA: 1\r\nB: 2\r\n"[..]),
        small,
    );
    assert!(got.unwrap().is_none(), "under the limits, still waiting");
    assert_eq!(RequestError::UriTooLong.status(), 414);
    assert_eq!(RequestError::TooLarge.status(), 400);
}
