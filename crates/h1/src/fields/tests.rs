use super::*;

#[test]
fn content_length_values() {
    let cases: &[(&[u8], Option<u64>)] = &[
        (b"0", Some(0)),
        (b"5", Some(5)),
        (b"005", Some(5)),
        (b"5,5", Some(5)),
        (b"5 , 5,\t5", Some(5)),
        (b"18446744073709551615", Some(u64::MAX)),
        (b"18446744073709551616", None),
        (b"", None),
        (b"+5", None),
        (b"-5", None),
        (b"5 5", None),
        (b"5,6", None),
        (b"5,", None),
        (b",5", None),
        (b"5,,5", None),
        (b"0x5", None),
        (b"5a", None),
        (b" ", None),
    ];
    for (value, want) in cases {
        assert_eq!(
            content_length(value),
            *want,
            "{:?}",
            String::from_utf8_lossy(value)
        );
    }
}

#[test]
fn last_members() {
    let cases: &[(&[u8], Option<&[u8]>)] = &[
        (b"chunked", Some(b"chunked")),
        (b"gzip, chunked", Some(b"chunked")),
        (b"chunked, gzip", Some(b"gzip")),
        (b"gzip,chunked ,", Some(b"chunked")),
        (b" \t", None),
        (b"", None),
    ];
    for (value, want) in cases {
        assert_eq!(
            last_member(value),
            *want,
            "{:?}",
            String::from_utf8_lossy(value)
        );
    }
}

#[test]
fn connection_tokens() {
    let cases: &[(&[u8], bool, bool)] = &[
        (b"close", true, false),
        (b"foo, Close", true, false),
        (b"CLOSE", true, false),
        (b"Keep-Alive", false, true),
        (b"keep-alive, upgrade", false, true),
        (b"closed, keep-alive-ish", false, false),
        (b"", false, false),
    ];
    for (value, close, keep_alive) in cases {
        let mut t = ConnectionTokens::default();
        t.add(value);
        assert_eq!(
            (t.close, t.keep_alive),
            (*close, *keep_alive),
            "{:?}",
            String::from_utf8_lossy(value)
        );
    }
}
