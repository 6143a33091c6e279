//! Unit tests of `snapshot`.

use super::*;

#[test]
fn targets_split_like_kong() {
    assert_eq!(split_target("10.0.0.1:8080"), Some(("10.0.0.1", 8080)));
    assert_eq!(split_target("api.test"), Some(("api.test", 8000)));
    assert_eq!(split_target("[::1]:81"), Some(("[::1]", 81)));
    assert_eq!(split_target("[::1]"), Some(("[::1]", 8000)));
    assert_eq!(split_target("host:notaport"), None);
    assert_eq!(split_target("::1"), None);
}

#[test]
fn the_empty_snapshot_has_no_routes() {
    let s = Snapshot::empty();
    assert!(s.router.is_empty());
    assert!(s.config().routes.is_empty());
    assert_eq!(s.compile_duration(), Duration::ZERO);
}
