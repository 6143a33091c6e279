//! The client side's HTTP/1.1 request reader (Sluice's own server): heads one after another as a
//! pipelining client sends them, each with its body by the framing the head chose, fed in pieces as a
//! socket would deliver them. Every accepted head must have a framing nginx would accept too: one length or
//! `chunked` alone.
#![no_main]

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use sluice_h1::{parse_request, BodyDecoder, Decoded, HeadLimits, RequestFraming};

fuzz_target!(|data: &[u8]| {
    let Some((&step, data)) = data.split_first() else {
        return;
    };
    let mut buf = BytesMut::new();
    let mut input = data.chunks(usize::from(step).max(1));
    loop {
        let head = match parse_request(&mut buf, HeadLimits::default()) {
            Ok(Some(head)) => head,
            Ok(None) => match input.next() {
                Some(piece) => {
                    buf.extend_from_slice(piece);
                    continue;
                }
                None => return,
            },
            Err(_) => return,
        };
        let lengths = head.headers.get_all(http::header::CONTENT_LENGTH).iter().count();
        let te = head.headers.contains_key(http::header::TRANSFER_ENCODING);
        match head.framing {
            RequestFraming::Chunked => assert!(te && lengths == 0),
            RequestFraming::Length(_) => assert!(!te && lengths <= 1),
        }
        let mut body = BodyDecoder::new(head.framing.into());
        loop {
            match body.decode(&mut buf) {
                Ok(Decoded::Data(_)) => continue,
                Ok(Decoded::Done) => break,
                Ok(Decoded::NeedMore) => match input.next() {
                    Some(piece) => buf.extend_from_slice(piece),
                    None => return,
                },
                Err(_) => return,
            }
        }
    }
});
