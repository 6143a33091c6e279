//! Tests of request ids: their format, and uniqueness across calls and threads.

#[test]
fn ids_are_hex_and_unique() {
    let mut seen = std::collections::HashSet::new();
    for _ in 0..10_000 {
        let id = super::next();
        assert_eq!(super::as_str(&id).len(), 32);
        assert!(id
            .iter()
            .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()));
        assert!(seen.insert(id));
    }
}

#[test]
fn threads_get_different_prefixes() {
    let here = super::next();
    let there = std::thread::spawn(super::next).join().unwrap();
    assert_ne!(here[..16], there[..16]);
}
