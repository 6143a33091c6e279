//! The gzip envelope: payloads made by zlib (Python's gzip/zlib modules, as lua-ffi-zlib would make
//! them), round trips, and the decompression bound.

use super::*;

const PLAIN: &[u8] = br#"{"type":"reconfigure","config_hash":"00000000000000000000000000000000"}"#;
/// `gzip.compress(PLAIN, mtime=0)`
const GZIP: &str = "1f8b0800000000000203ab562aa92c4855b2522a4a4dcecf4bcb4c2f2d4a55d25182b0e333128b338072060480522d00219e2c7847000000";
/// `zlib.compress(PLAIN)`
const ZLIB: &str =
    "789cab562aa92c4855b2522a4a4dcecf4bcb4c2f2d4a55d25182b0e333128b338072060480522d001fcc137d";

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

#[test]
fn inflates_gzip_and_zlib_like_kong() {
    assert_eq!(inflate(&unhex(GZIP), DEFAULT_MAX_PAYLOAD).unwrap(), PLAIN);
    assert_eq!(inflate(&unhex(ZLIB), DEFAULT_MAX_PAYLOAD).unwrap(), PLAIN);
}

#[test]
fn deflate_writes_gzip_that_round_trips() {
    let z = deflate(PLAIN);
    assert_eq!(&z[..3], &[0x1f, 0x8b, 8], "gzip magic + deflate method");
    assert_eq!(inflate(&z, PLAIN.len()).unwrap(), PLAIN);
}

#[test]
fn refuses_payloads_that_inflate_past_the_limit() {
    let data = vec![b'x'; 4096];
    let z = deflate(&data);
    assert!(z.len() < 100, "compresses well");
    assert_eq!(
        inflate(&z, 4096).unwrap().len(),
        4096,
        "exactly at the limit is fine"
    );
    let err = inflate(&z, 4095).unwrap_err();
    assert!(matches!(err, InflateError::TooLarge { limit: 4095 }));
    assert_eq!(
        err.to_string(),
        "payload inflates past the cluster_max_payload limit of 4095 bytes"
    );
}

#[test]
fn corrupt_payloads_are_errors() {
    let mut z = unhex(GZIP);
    z.truncate(z.len() - 12);
    assert!(matches!(
        inflate(&z, DEFAULT_MAX_PAYLOAD),
        Err(InflateError::Corrupt(_))
    ));
    assert!(matches!(
        inflate(PLAIN, DEFAULT_MAX_PAYLOAD),
        Err(InflateError::Corrupt(_))
    ));
}
