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

/// A second process on the same port would share its connections; the first socket claims the port alone,
/// and only this process's further workers join it.
#[test]
fn a_claimed_port_takes_its_own_workers_and_no_one_else() {
    let any = parse_listen("127.0.0.1:0").unwrap().remove(0);
    let first = bind(&any, Bind::Claim).unwrap();
    let mut same = any.clone();
    same.addr = first.local_addr().unwrap();
    let _second_worker = bind(&same, Bind::Join).unwrap();
    let err = bind(&same, Bind::Claim).unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::AddrInUse);
}
