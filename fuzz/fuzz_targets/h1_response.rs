//! The upstream side's HTTP/1.1 response reader: a head, then its body by the framing the head chose
//! (length, chunked, until close), fed in pieces as a socket would deliver them.
#![no_main]

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use sluice_h1::{parse_response, BodyDecoder, Decoded};

fuzz_target!(|data: &[u8]| {
    let Some((&flags, data)) = data.split_first() else {
        return;
    };
    let head_request = flags & 1 == 1;
    let step = usize::from(flags >> 1).max(1);
    let mut buf = BytesMut::new();
    let mut input = data.chunks(step);
    let head = loop {
        match parse_response(&mut buf, head_request) {
            Ok(Some(head)) => break head,
            Ok(None) => match input.next() {
                Some(piece) => buf.extend_from_slice(piece),
                None => return,
            },
            Err(_) => return,
        }
    };
    let mut body = BodyDecoder::new(head.framing);
    loop {
        match body.decode(&mut buf) {
            Ok(Decoded::Data(_)) => continue,
            Ok(Decoded::Done) => return,
            Ok(Decoded::NeedMore) => match input.next() {
                Some(piece) => buf.extend_from_slice(piece),
                None => {
                    let _ = body.eof();
                    return;
                }
            },
            Err(_) => return,
        }
    }
});
