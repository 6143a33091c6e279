//! The upstream side's HTTP/1.1 response reader: a head, then its body by the framing the head chose
//! (length, chunked, until close), fed in pieces as a socket would deliver them. The head's fields as bytes
//! must agree with the map made of them and, when they are one block, with their lines.
#![no_main]

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use sluice_h1::{parse_response, BodyDecoder, Decoded, FieldKind, ResponseFields};

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
    fields_agree(&head.fields);
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

/// The fields' views agree: each kind is its name's, the map holds every value but a dropped length, and the
/// verbatim block is the fields' lines.
fn fields_agree(fields: &ResponseFields) {
    let mut lines = Vec::new();
    let mut values = 0;
    for f in fields.iter() {
        assert_eq!(FieldKind::of(f.name), f.kind);
        values += usize::from(!(f.kind == FieldKind::ContentLength && fields.length_dropped()));
        lines.extend_from_slice(f.name);
        lines.extend_from_slice(b": ");
        lines.extend_from_slice(f.value);
        lines.extend_from_slice(b"\r\n");
    }
    assert_eq!(fields.to_map().len(), values);
    if let Some(block) = fields.block() {
        assert_eq!(block, &lines[..]);
    }
}
