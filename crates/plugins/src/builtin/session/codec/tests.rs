//! Unit tests of the session cookie codec: sealing and opening, tampering, touching.

use super::*;

#[test]
fn sealed_data_opens_with_the_same_secret_only() {
    let keys = Keys::new("s3cret");
    for remember in [false, true] {
        let (header, payload) = keys.seal(1_700_000_000, 5, b"[[1,\"default\"]]", remember);
        assert_eq!(header.encoded().len(), HEADER_ENCODED_SIZE);
        let decoded = Header::decode(&format!("{}{payload}", header.encoded())).unwrap();
        assert!(keys.verify(&decoded));
        assert_eq!(
            (decoded.creation(), decoded.rolling_offset()),
            (1_700_000_000, 5)
        );
        assert_eq!(
            keys.open(&decoded, &payload, remember).unwrap(),
            b"[[1,\"default\"]]"
        );
        assert!(!Keys::new("other").verify(&decoded));
        assert!(Keys::new("other")
            .open(&decoded, &payload, remember)
            .is_err());
    }
}

#[test]
fn a_changed_byte_anywhere_is_refused() {
    let keys = Keys::new("s3cret");
    let (header, payload) = keys.seal(100, 0, b"{\"a\":1}", false);
    for i in 0..HEADER_SIZE {
        let mut bad = header.clone();
        bad.bytes[i] ^= 1;
        let opened = Header::decode(&bad.encoded())
            .ok()
            .filter(|h| keys.verify(h))
            .map(|h| keys.open(&h, &payload, false));
        assert!(!matches!(opened, Some(Ok(_))), "byte {i}");
    }
    let mut raw = URL_SAFE_NO_PAD.decode(&payload).unwrap();
    raw[0] ^= 1;
    let tampered = URL_SAFE_NO_PAD.encode(raw);
    assert!(keys.open(&header, &tampered, false).is_err());
}

#[test]
fn touch_keeps_the_payload_valid() {
    let keys = Keys::new("k");
    let (mut header, payload) = keys.seal(100, 0, b"[]", false);
    header.set_idling(&keys, 42);
    assert!(keys.verify(&header));
    assert_eq!(header.idling_offset(), 42);
    assert!(keys.open(&header, &payload, false).is_ok());
}
