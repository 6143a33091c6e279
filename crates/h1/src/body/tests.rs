use bytes::BytesMut;

use super::*;

/// What feeding an input to a decoder gave: the body, the error if any, and the bytes left after `Done`.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Outcome {
    body: Vec<u8>,
    done: bool,
    error: Option<BodyError>,
    left: Vec<u8>,
}

/// Feeds `input` in pieces of `step` bytes, decoding after each until `NeedMore` or `Done`; then EOF.
pub(super) fn feed(framing: Framing, input: &[u8], step: usize) -> Outcome {
    let mut dec = BodyDecoder::new(framing);
    let mut buf = BytesMut::new();
    let mut body = Vec::new();
    let mut pieces = input.chunks(step);
    let error = 'outer: loop {
        loop {
            match dec.decode(&mut buf) {
                Ok(Decoded::Data(d)) => {
                    assert!(!d.is_empty(), "empty data");
                    body.extend_from_slice(&d);
                }
                Ok(Decoded::NeedMore) => break,
                Ok(Decoded::Done) => break 'outer None,
                Err(e) => break 'outer Some(e),
            }
        }
        match pieces.next() {
            Some(p) => buf.extend_from_slice(p),
            None => break dec.eof().err(),
        }
    };
    // After an error the connection is dropped: what is left does not matter.
    let left = match error {
        None => buf.iter().chain(pieces.flatten()).copied().collect(),
        Some(_) => Vec::new(),
    };
    Outcome {
        body,
        done: dec.is_done(),
        error,
        left,
    }
}

/// Checks `want` for the input fed whole, byte by byte, and in 3-byte pieces.
pub(super) fn check(framing: Framing, input: &[u8], want: Outcome) {
    for step in [input.len().max(1), 1, 3] {
        let got = feed(framing, input, step);
        assert_eq!(
            got,
            want,
            "{framing:?} {:?} step {step}",
            String::from_utf8_lossy(input)
        );
    }
}

pub(super) fn ok(body: &str, left: &str) -> Outcome {
    Outcome {
        body: body.into(),
        done: true,
        error: None,
        left: left.into(),
    }
}

pub(super) fn err(body: &str, error: BodyError) -> Outcome {
    Outcome {
        body: body.into(),
        done: false,
        error: Some(error),
        left: Vec::new(),
    }
}

#[test]
fn length_bodies() {
    check(Framing::Empty, b"", ok("", ""));
    check(Framing::Empty, b"next", ok("", "next"));
    check(Framing::Length(0), b"abc", ok("", "abc"));
    check(Framing::Length(5), b"hello", ok("hello", ""));
    check(
        Framing::Length(5),
        b"helloHTTP/1.1",
        ok("hello", "HTTP/1.1"),
    );
    check(
        Framing::Length(5),
        b"hel",
        err("hel", BodyError::ClosedEarly),
    );
}

#[test]
fn until_close_bodies() {
    check(
        Framing::UntilClose,
        b"all of it\r\n0\r\n\r\n",
        ok("all of it\r\n0\r\n\r\n", ""),
    );
    check(Framing::UntilClose, b"", ok("", ""));
}

#[test]
fn remaining_and_eof() {
    let mut dec = BodyDecoder::new(Framing::Length(10));
    assert_eq!(dec.remaining(), Some(10));
    let mut buf = BytesMut::from(&b"0123"[..]);
    assert_eq!(dec.decode(&mut buf), Ok(Decoded::Data("0123".into())));
    assert_eq!(dec.remaining(), Some(6));
    assert_eq!(dec.eof(), Err(BodyError::ClosedEarly));
    assert_eq!(BodyDecoder::new(Framing::Empty).remaining(), Some(0));
    assert_eq!(BodyDecoder::new(Framing::Chunked).remaining(), None);
    let mut until_close = BodyDecoder::new(Framing::UntilClose);
    assert_eq!(until_close.remaining(), None);
    assert!(!until_close.is_done());
    assert_eq!(until_close.eof(), Ok(()));
    assert!(until_close.is_done());
    assert_eq!(until_close.decode(&mut BytesMut::new()), Ok(Decoded::Done));
    assert!(!BodyError::BadChunk.to_string().is_empty());
    assert!(!BodyError::ClosedEarly.to_string().is_empty());
}
