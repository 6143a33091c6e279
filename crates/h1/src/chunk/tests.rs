use super::*;
use bytes::BytesMut;

#[test]
fn chunk_header_matches_format() {
    let cases: &[(usize, &str)] = &[
        (0, "0\r\n"),
        (1, "1\r\n"),
        (15, "f\r\n"),
        (16, "10\r\n"),
        (255, "ff\r\n"),
        (4096, "1000\r\n"),
        (0xdead_beef, "deadbeef\r\n"),
        (usize::MAX - 1, &format!("{:x}\r\n", usize::MAX - 1)),
        (usize::MAX, &format!("{:x}\r\n", usize::MAX)),
    ];
    for (len, want) in cases {
        let mut out = BytesMut::from(&b"prefix:"[..]);
        chunk_header(*len, &mut out);
        assert_eq!(&out[..], format!("prefix:{want}").as_bytes(), "len {len}");
    }
}

#[test]
fn last_chunk_is_zero_size_and_empty_trailers() {
    assert_eq!(LAST_CHUNK, b"0\r\n\r\n");
}
