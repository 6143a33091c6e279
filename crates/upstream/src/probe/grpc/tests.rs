//! Unit tests of the gRPC probe's reading of a `HealthCheckResponse` frame.

use super::*;

/// `message` in an uncompressed gRPC frame.
fn frame(message: &[u8]) -> Vec<u8> {
    let mut out = vec![0];
    out.extend_from_slice(&u32::try_from(message.len()).unwrap().to_be_bytes());
    out.extend_from_slice(message);
    out
}

#[test]
fn only_a_whole_serving_answer_is_serving() {
    let table: [(&str, Vec<u8>, bool); 10] = [
        ("SERVING", frame(&[0x08, 0x01]), true),
        ("NOT_SERVING", frame(&[0x08, 0x02]), false),
        ("UNKNOWN (field absent)", frame(&[]), false),
        ("SERVICE_UNKNOWN", frame(&[0x08, 0x03]), false),
        // Unknown fields of every wire type are skipped; the last `status` counts.
        (
            "unknown fields around it",
            frame(&[
                0x10, 0x96, 0x01, 0x1a, 0x02, b'h', b'i', 0x08, 0x01, 0x25, 1, 2, 3, 4,
            ]),
            true,
        ),
        (
            "repeated, last wins",
            frame(&[0x08, 0x01, 0x08, 0x02]),
            false,
        ),
        (
            "compressed",
            [&[1u8][..], &frame(&[0x08, 0x01])[1..]].concat(),
            false,
        ),
        ("length too long", frame(&[0x08, 0x01])[..6].to_vec(), false),
        ("truncated varint", frame(&[0x08, 0x81]), false),
        ("empty body", Vec::new(), false),
    ];
    for (name, body, want) in table {
        assert_eq!(serving(&body), want, "{name}");
    }
}

#[test]
fn varints_read_up_to_ten_bytes() {
    let mut one: &[u8] = &[0x96, 0x01, 0xff];
    assert_eq!(varint(&mut one), Some(150));
    assert_eq!(one, &[0xff]);
    let max = [0xff; 9]
        .iter()
        .chain(&[0x01])
        .copied()
        .collect::<Vec<u8>>();
    assert_eq!(varint(&mut max.as_slice()), Some(u64::MAX));
    assert_eq!(varint(&mut [0x80; 11].as_slice()), None);
}
