//! Unit tests of `listen`.

use super::*;

#[test]
fn parses_kong_listen_syntax() {
    let l = parse_listen("0.0.0.0:8000 reuseport backlog=16384, 127.0.0.1:8443 http2 ssl").unwrap();
    assert_eq!(l.len(), 2);
    assert_eq!(l[0].addr, "0.0.0.0:8000".parse().unwrap());
    assert!(!l[0].ssl && l[1].ssl && l[1].http2);
    assert!(parse_listen("off").unwrap().is_empty());
    assert!(parse_listen("nonsense").is_err());
    assert!(parse_listen("127.0.0.1:1 bogus")
        .unwrap_err()
        .contains("bogus"));
}
