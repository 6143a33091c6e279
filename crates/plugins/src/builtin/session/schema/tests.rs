//! Unit tests of the session plugin's schema: defaults, the random secret, shorthands, refused values.

use super::*;
use serde_json::json;

#[test]
fn defaults_and_a_stable_random_secret() {
    let a = schema().validate(&json!({})).unwrap();
    let b = schema().validate(&json!({})).unwrap();
    let secret = a["secret"].as_str().unwrap();
    assert_eq!(secret.len(), 44);
    assert!(secret.chars().all(|c| c.is_ascii_alphanumeric()));
    assert_eq!(a["secret"], b["secret"]);
    assert_eq!(a["cookie_same_site"], "Strict");
    assert_eq!(a["logout_methods"], json!(["POST", "DELETE"]));
    assert_eq!(a["rolling_timeout"], 3600);
    assert!(a.get("cookie_lifetime").is_none());
}

#[test]
fn shorthands_write_through_and_vanish() {
    let v = schema()
        .validate(
            &json!({"cookie_lifetime": 60, "cookie_idletime": null, "cookie_renew": 5,
            "cookie_discard": 3, "cookie_samesite": "off", "cookie_httponly": false,
            "cookie_persistent": true}),
        )
        .unwrap();
    assert_eq!(v["rolling_timeout"], 60);
    assert_eq!(v["idling_timeout"], 0);
    assert_eq!(v["stale_ttl"], 3);
    assert_eq!(v["cookie_same_site"], "Lax");
    assert_eq!(v["cookie_http_only"], false);
    assert_eq!(v["remember"], true);
    for old in [
        "cookie_lifetime",
        "cookie_idletime",
        "cookie_renew",
        "cookie_samesite",
    ] {
        assert!(v.get(old).is_none(), "{old}");
    }
}

#[test]
fn bad_values_and_kong_storage_are_refused() {
    let errors = schema()
        .validate(
            &json!({"cookie_same_site": "Sometimes", "logout_methods": ["PUT"],
            "response_headers": ["nope"]}),
        )
        .unwrap_err();
    let fields: Vec<_> = errors.iter().map(|e| e.field.as_str()).collect();
    assert_eq!(
        fields,
        ["cookie_same_site", "response_headers.1", "logout_methods.1"]
    );
    let errors = schema().validate(&json!({"storage": "kong"})).unwrap_err();
    assert_eq!(errors[0].field, "storage");
    assert!(errors[0].message.contains("not supported"));
}
