use super::*;
use std::time::{Duration, Instant};

#[test]
fn deep_flow_nesting_is_refused_fast_with_its_line() {
    for text in [
        "{a: ".repeat(20_000),
        "[".repeat(200),
        format!("x: 1\ny: {}", "[".repeat(MAX_FLOW_DEPTH + 1)),
    ] {
        let started = Instant::now();
        let err = check_flow_depth(&text).unwrap_err();
        assert!(
            err.contains(&format!("nested deeper than {MAX_FLOW_DEPTH}")),
            "{err}"
        );
        assert!(started.elapsed() < Duration::from_millis(200));
    }
    let err =
        check_flow_depth(&format!("x: 1\ny: {}", "[".repeat(MAX_FLOW_DEPTH + 1))).unwrap_err();
    assert!(err.contains("line 2"), "{err}");
    // 400 KB, the size that never finished parsing before.
    assert!(check_flow_depth(&"{a: ".repeat(100_000)).is_err());
}

#[test]
fn ordinary_documents_pass() {
    let deepest = format!(
        "{}{}",
        "[".repeat(MAX_FLOW_DEPTH),
        "]".repeat(MAX_FLOW_DEPTH)
    );
    for text in [
        "services:\n- name: a\n  url: http://x\n  routes: [{paths: [/a], methods: [GET]}]\n",
        "paths: ['~/v[0-9]+/users']\nregex: \"x{1,3}[\"\n",
        "path: /a[b\nother: c{d\nmore: e[f\n# a comment with [[[[ and {{{{\n",
        &deepest,
    ] {
        assert_eq!(check_flow_depth(text), Ok(()), "{text}");
    }
    // Unbalanced brackets inside plain scalars never add up across a large file.
    let many = "- path: /a[b\n".repeat(10_000);
    assert_eq!(check_flow_depth(&many), Ok(()));
}
