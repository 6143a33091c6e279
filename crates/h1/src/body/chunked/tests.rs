use bytes::BytesMut;

use crate::body::tests::{check, err, ok};
use crate::{BodyDecoder, BodyError, Decoded, Framing};

/// (input, body, bytes left after Done)
#[rustfmt::skip]
const GOOD: &[(&str, &str, &str)] = &[
    ("0\r\n\r\n", "", ""),
    ("5\r\nhello\r\n0\r\n\r\n", "hello", ""),
    ("5\r\nhello\r\n6\r\n world\r\n0\r\n\r\nnext", "hello world", "next"),
    ("A\r\n0123456789\r\na\r\n0123456789\r\n0\r\n\r\n", "01234567890123456789", ""),
    ("000005\r\nhello\r\n0000\r\n\r\n", "hello", ""),
    ("5;name=value\r\nhello\r\n0;last\r\n\r\n", "hello", ""),
    ("5 ;a=\"q;\\\"x\"\r\nhello\r\n0\t\r\n\r\n", "hello", ""),
    ("5\r\nhello\r\n0\r\nExpires: never\r\nX-Sum: 1\r\n\r\nrest", "hello", "rest"),
    ("0\r\nA: b\r\n\r\n", "", ""),
    ("0\r\n\r\nHTTP/1.1 200 OK\r\n", "", "HTTP/1.1 200 OK\r\n"),
];

#[test]
fn chunked_bodies() {
    for (input, body, left) in GOOD {
        check(Framing::Chunked, input.as_bytes(), ok(body, left));
    }
    // The largest size (16 hex digits) is accepted; the body then ends early.
    let input = b"ffffffffffffffff\r\nab";
    check(Framing::Chunked, input, err("ab", BodyError::ClosedEarly));
}

#[test]
fn bad_chunks() {
    let cases: &[(&str, &str)] = &[
        // (input, body before the error)
        ("\r\n", ""),
        ("x\r\n", ""),
        ("-1\r\n", ""),
        ("0x5\r\nhello\r\n0\r\n\r\n", ""),
        ("10000000000000000\r\n", ""),
        ("00000000000000001\r\n", ""),
        ("5\nhello\r\n0\r\n\r\n", ""),
        ("5\r\rhello\r\n0\r\n\r\n", ""),
        ("5 5\r\nhello\r\n0\r\n\r\n", ""),
        ("5;a\nb\r\nhello\r\n", ""),
        ("5;a\0\r\nhello\r\n", ""),
        ("5\r\nhelloX\r\n0\r\n\r\n", "hello"),
        ("5\r\nhelloX\n0\r\n\r\n", "hello"),
        ("5\r\nhello\n\n0\r\n\r\n", "hello"),
        ("5\r\nhello\n0\r\n\r\n", "hello"),
        ("5\r\nhello\rX0\r\n\r\n", "hello"),
        ("5\r\nhello\r\n0\r\nA: b\n\r\n", "hello"),
        ("5\r\nhello\r\n0\r\n\n", "hello"),
        ("5\r\nhello\r\n0\r\n\rX", "hello"),
        ("5\r\nhello\r\n0\r\nA: \x01\r\n\r\n", "hello"),
    ];
    for (input, body) in cases {
        check(
            Framing::Chunked,
            input.as_bytes(),
            err(body, BodyError::BadChunk),
        );
    }
}

#[test]
fn chunked_closed_early() {
    for input in [
        "",
        "5",
        "5\r\nhel",
        "5\r\nhello",
        "5\r\nhello\r\n",
        "5\r\nhello\r\n0\r\n",
        "5\r\nhello\r\n0\r\nA: b\r\n",
    ] {
        let body = if input.len() > 3 {
            &input[3..input.len().min(8)]
        } else {
            ""
        };
        check(
            Framing::Chunked,
            input.as_bytes(),
            err(body, BodyError::ClosedEarly),
        );
    }
}

#[test]
fn chunked_limits() {
    let ext = format!("1;{}\r\na\r\n0\r\n\r\n", "e".repeat(16 * 1024));
    check(Framing::Chunked, ext.as_bytes(), ok("a", ""));
    let ext = format!("1;{}\r\na\r\n0\r\n\r\n", "e".repeat(16 * 1024 + 1));
    check(
        Framing::Chunked,
        ext.as_bytes(),
        err("", BodyError::BadChunk),
    );
    let trailer = format!("0\r\nX: {}\r\n\r\n", "t".repeat(16 * 1024));
    check(
        Framing::Chunked,
        trailer.as_bytes(),
        err("", BodyError::BadChunk),
    );
}

#[test]
fn data_is_returned_before_the_chunk_is_complete() {
    let mut dec = BodyDecoder::new(Framing::Chunked);
    let mut buf = BytesMut::from(&b"a\r\n01234"[..]);
    assert_eq!(dec.decode(&mut buf), Ok(Decoded::Data("01234".into())));
    assert_eq!(dec.decode(&mut buf), Ok(Decoded::NeedMore));
    buf.extend_from_slice(b"56789\r\n0\r\n\r\n");
    assert_eq!(dec.decode(&mut buf), Ok(Decoded::Data("56789".into())));
    assert!(!dec.is_done());
    assert_eq!(dec.decode(&mut buf), Ok(Decoded::Done));
    assert!(dec.is_done() && buf.is_empty());
    assert_eq!(dec.eof(), Ok(()));
}
