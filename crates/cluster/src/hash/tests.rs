//! Config hash: the serialization rules on small values, and the golden vectors Kong's Lua computed.

use crate::test_vectors as vectors;

use super::*;
use serde_json::json;

fn s(v: Value) -> String {
    String::from_utf8(sorted_string(&v)).unwrap()
}

#[test]
fn serializes_like_to_sorted_string() {
    assert_eq!(s(json!(null)), "/null/");
    assert_eq!(s(json!("a;b:c")), "a;b:c");
    assert_eq!(s(json!(true)), "true");
    assert_eq!(s(json!(1.0)), "1");
    assert_eq!(s(json!([])), "{}");
    assert_eq!(s(json!({})), "{}");
    assert_eq!(s(json!([1])), "1");
    assert_eq!(s(json!([1, 2, 3, 4, 5])), "1;2;3;4;5");
    assert_eq!(s(json!([1, 2, 3, 4, 5, 6])), "1;2;3;4;5;6;");
    assert_eq!(
        s(json!({"b": [null, false], "a": {"y": [], "x": 0.5}})),
        "a:x:0.5;y:{};;b:/null/;false;"
    );
}

#[test]
fn folds_the_buffer_past_one_megabyte() {
    // "x…x;" is exactly 1,000,000 bytes, not more than the limit: no fold yet.
    let big = "x".repeat(FOLD_AT - 1);
    assert_eq!(sorted_string(&json!([big, "y"])).len(), FOLD_AT + 1);
    let bigger = "x".repeat(FOLD_AT);
    let folded = sorted_string(&json!([bigger.clone(), "y"]));
    let mut want = Md5::digest(format!("{bigger};").as_bytes()).to_vec();
    want.push(b'y');
    assert_eq!(folded, want);
}

#[test]
fn empty_config_hashes_are_zeros_only_for_missing_groups() {
    let h = config_hashes(&json!({}));
    assert_eq!(h.routes, EMPTY_CONFIG_HASH);
    assert_eq!(h.targets, EMPTY_CONFIG_HASH);
    // the rest ({} → "{}") is hashed, so the config hash is not zeros
    assert_ne!(h.config, EMPTY_CONFIG_HASH);
    assert_eq!(value_hash(&json!({})), hex(&Md5::digest(b"{}")));
}

#[test]
fn golden_vectors_computed_by_kong() {
    for v in vectors::vectors() {
        let h = config_hashes(&v.config);
        let fill = |k: &str| {
            if k == "-" {
                EMPTY_CONFIG_HASH.to_owned()
            } else {
                k.to_owned()
            }
        };
        let want: Vec<String> = v.kong.iter().map(|k| fill(k)).collect();
        let got = [
            h.config,
            h.routes,
            h.services,
            h.plugins,
            h.upstreams,
            h.targets,
        ];
        assert_eq!(got.as_slice(), want.as_slice(), "{}", v.name);
    }
}

#[test]
fn json_minus_zero_is_a_lua_minus_zero() {
    // cjson decodes "-0" to the double -0, which Lua prints "-0"
    let v: Value = serde_json::from_str("[-0, -0.0, 0]").unwrap();
    assert_eq!(s(v), "-0;-0;0");
}
