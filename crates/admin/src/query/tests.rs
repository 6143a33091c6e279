//! Unit tests of `query`.

use super::*;

#[test]
fn unescape_decodes_percent_and_plus_and_keeps_bad_escapes() {
    assert_eq!(unescape("a%2Cb+c"), "a,b c");
    assert_eq!(unescape("%zz%4"), "%zz%4");
    assert_eq!(unescape("%e2%9c%93"), "✓");
}

#[test]
fn escape_round_trips_through_unescape() {
    let raw = "a,b/c d=é&";
    assert_eq!(escape("abc-_.~"), "abc-_.~");
    assert_eq!(unescape(&escape(raw)), raw);
    assert!(!escape(raw).contains([',', '/', ' ', '&', '=']));
}

#[test]
fn pairs_and_get_read_every_parameter() {
    let q = Some("size=2&tags=a%2Cb&flag&size=3");
    assert_eq!(
        pairs(q),
        vec![
            ("size".to_string(), "2".to_string()),
            ("tags".to_string(), "a,b".to_string()),
            ("flag".to_string(), String::new()),
            ("size".to_string(), "3".to_string()),
        ]
    );
    assert_eq!(get(q, "size").as_deref(), Some("2"));
    assert_eq!(get(q, "flag").as_deref(), Some(""));
    assert_eq!(get(None, "size"), None);
}

#[test]
fn path_segments_keep_plus() {
    assert_eq!(unescape_path("%2A.a+b"), "*.a+b");
}
