//! ldap-auth's schema, header reading and cache on their own (the whole plugin is tested against a real
//! OpenLDAP server through the binary in `crates/sluice/tests/plugins_ldap_auth.rs`).

use super::{builtin, cache, Cached, Inner, LdapAuth};
use base64::Engine;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::time::Duration;

fn validate(config: Value) -> Result<Value, Vec<sluice_model::schema::FieldError>> {
    builtin().def.config.validate(&config)
}

#[test]
fn schema_defaults_and_kongs_checks() {
    let b = builtin();
    assert_eq!(
        (b.def.name, b.def.priority, b.def.no_consumer),
        ("ldap-auth", 1200, true)
    );
    let v =
        validate(json!({"ldap_host": "ldap.test", "base_dn": "dc=x", "attribute": "uid"})).unwrap();
    for (field, default) in [
        ("ldap_port", json!(389)),
        ("ldaps", json!(false)),
        ("start_tls", json!(false)),
        ("verify_ldap_host", json!(false)),
        ("cache_ttl", json!(60)),
        ("hide_credentials", json!(false)),
        ("timeout", json!(10000)),
        ("keepalive", json!(60000)),
        ("header_type", json!("ldap")),
    ] {
        assert_eq!(v[field], default, "{field}");
    }
    let both = json!({"ldap_host": "h", "base_dn": "d", "attribute": "a", "ldaps": true, "start_tls": true});
    let errors = validate(both).unwrap_err();
    // Kong's conditional: the `then` field's error and the entity's.
    assert_eq!(errors.len(), 2);
    assert_eq!(errors[0].field, "start_tls");
    assert_eq!(errors[0].message, "value must be false");
    assert_eq!(errors[1].field, "@entity");
    assert_eq!(
        errors[1].message,
        "'ldaps' and 'start_tls' cannot be enabled simultaneously"
    );
    let missing = validate(json!({})).unwrap_err();
    let fields: Vec<&str> = missing.iter().map(|e| e.field.as_str()).collect();
    for f in ["ldap_host", "base_dn", "attribute"] {
        assert!(fields.contains(&f), "{f} required: {missing:?}");
    }
    assert!(validate(json!({"ldap_host": "h:1", "base_dn": "d", "attribute": "a"})).is_err());
    assert!(validate(
        json!({"ldap_host": "h", "ldap_port": 70000, "base_dn": "d", "attribute": "a"})
    )
    .is_err());
}

/// The plugin's state for `config` (on top of the required fields), made as `build` makes it.
fn plugin(config: Value) -> LdapAuth {
    let mut full = json!({"ldap_host": "LDAP.test", "base_dn": "dc=x", "attribute": "uid"});
    full.as_object_mut()
        .unwrap()
        .extend(config.as_object().unwrap().clone());
    let config = serde_json::from_value(validate(full).unwrap()).unwrap();
    LdapAuth(std::sync::Arc::new(Inner::new(config).unwrap()))
}

fn basic(text: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(text)
}

#[test]
fn credentials_as_kong_reads_them() {
    let p = plugin(json!({}));
    let read = |value: &str| {
        p.0.given(&http::HeaderValue::from_str(value).unwrap())
            .map(|g| (g.username, g.password))
    };
    let pair = |u: &str, p: &str| Some((u.to_string(), p.to_string()));
    assert_eq!(
        read(&format!("ldap {}", basic("einstein:password"))),
        pair("einstein", "password")
    );
    assert_eq!(
        read(&format!("  LDAP\t{}", basic("einstein:password"))),
        pair("einstein", "password")
    );
    // The first colon splits; the rest is the password.
    assert_eq!(read(&format!("ldap {}", basic("a:b:c"))), pair("a", "b:c"));
    // No password, no separator, another scheme, no space after it, bad base64: nothing.
    for bad in [
        format!("ldap {}", basic("einstein:")),
        format!("ldap {}", basic("einstein")),
        format!("basic {}", basic("einstein:password")),
        format!("ldap{}", basic("einstein:password")),
        format!("invalidldap {}", basic("einstein:password")),
        "ldap ".to_string(),
        "ldap !!!".to_string(),
        "abcd".to_string(),
    ] {
        assert_eq!(read(&bad), None, "{bad}");
    }
    let custom = plugin(json!({"header_type": "Basic"}));
    let value = http::HeaderValue::from_str(&format!("basic {}", basic("u:p"))).unwrap();
    assert_eq!(
        custom.0.given(&value).map(|g| g.username),
        Some("u".to_string())
    );
}

#[test]
fn cache_key_is_kongs_text_hashed() {
    let p = plugin(json!({"ldap_port": 3890, "cache_ttl": 2}));
    let value = http::HeaderValue::from_str(&format!("ldap {}", basic("einstein:pw"))).unwrap();
    let given = p.0.given(&value).unwrap();
    let kong: [u8; 32] = Sha256::digest(b"ldap.test:3890:dc=x:uid:2:einstein:pw").into();
    assert_eq!(given.key, kong);
    let other = http::HeaderValue::from_str(&format!("ldap {}", basic("einstein:pw2"))).unwrap();
    assert_ne!(
        p.0.given(&other).unwrap().key,
        kong,
        "the password is part of the key"
    );
}

#[test]
fn verdicts_expire_and_order_follows_kong() {
    let p = plugin(json!({"base_dn": "dc=order"}));
    let header =
        |text: &str| http::HeaderValue::from_str(&format!("ldap {}", basic(text))).unwrap();
    let mut headers = http::HeaderMap::new();
    headers.insert(http::header::AUTHORIZATION, header("good:pw"));
    headers.insert(http::header::PROXY_AUTHORIZATION, header("bad:pw"));
    // Nothing cached: both need the server, Proxy-Authorization first.
    match p.0.cached(&headers) {
        Cached::Unknown(g) => assert_eq!(
            g.iter().map(|g| g.username.as_str()).collect::<Vec<_>>(),
            ["bad", "good"]
        ),
        _ => panic!("expected Unknown"),
    }
    let key = |text: &str| p.0.given(&header(text)).unwrap().key;
    cache::put(key("bad:pw"), false, Some(Duration::from_secs(60)));
    cache::put(key("good:pw"), true, Some(Duration::from_millis(30)));
    assert!(matches!(p.0.cached(&headers), Cached::Accepted(g) if g.username == "good"));
    std::thread::sleep(Duration::from_millis(40));
    assert!(matches!(p.0.cached(&headers), Cached::Unknown(g) if g.len() == 1));
    headers.remove(http::header::AUTHORIZATION);
    assert!(matches!(p.0.cached(&headers), Cached::Refused));
    cache::put(key("forever:pw"), true, None);
    assert_eq!(cache::get(&key("forever:pw")), Some(true));
}
