//! Table tests for decoding escapes of non-ASCII bytes and mapping lengths back.

use super::*;

#[test]
fn decodes_non_ascii_escapes_only() {
    let cases: &[(&str, Result<&str, NotUtf8>)] = &[
        ("/plain", Ok("/plain")),
        ("/caf%C3%A9/x", Ok("/café/x")),
        ("/caf%c3%a9", Ok("/café")),
        // Escapes of reserved ASCII characters stay (the proxy already decoded the others).
        ("/a%2Fb%3F", Ok("/a%2Fb%3F")),
        ("/%FC%80%80%80%80%AF", Err(NotUtf8)),
        ("/%C3", Err(NotUtf8)),
        ("/%zz%C3%A9", Ok("/%zzé")),
        ("/100%", Ok("/100%")),
    ];
    for (path, want) in cases {
        let got = decode(path).map(|c| c.into_owned());
        assert_eq!(
            got,
            want.as_ref().map(|s| s.to_string()).map_err(|_| NotUtf8),
            "{path}"
        );
    }
    assert!(matches!(decode("/plain"), Ok(Cow::Borrowed(_))));
}

#[test]
fn maps_decoded_lengths_back_to_the_encoded_path() {
    // (encoded, decoded length, encoded length)
    let cases: &[(&str, usize, usize)] = &[
        ("/plain/x", 6, 6),
        ("/caf%C3%A9/x", 6, 10),
        ("/caf%C3%A9/x", 8, 12),
        ("/caf%C3%A9", 0, 0),
        ("/a%2Fb", 4, 4),
    ];
    for (encoded, decoded, want) in cases {
        assert_eq!(encoded_len(encoded, *decoded), *want, "{encoded} {decoded}");
    }
}
