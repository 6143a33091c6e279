use super::*;
use sluice_model::Ref;

fn key(key: &str, ttl: Option<u64>) -> KeyAuthCredential {
    KeyAuthCredential {
        id: Uuid::new_v4(),
        consumer: Ref { id: Uuid::nil() },
        key: key.into(),
        ttl,
        tags: None,
        created_at: 0,
    }
}

/// A key whose `ttl` (Kong's expiry time in a declarative file) has passed is not found, as Kong's DB-less
/// node no longer finds it; one that expires later, or never, is.
#[test]
fn an_expired_key_is_not_found() {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let config = Config {
        keyauth_credentials: vec![
            key("old", Some(now - 1)),
            key("later", Some(now + 3600)),
            key("forever", None),
        ],
        ..Config::default()
    };
    let c = Credentials::build(&config);
    assert!(c.key("old").is_none());
    assert!(c.key("later").is_some());
    assert!(c.key("forever").is_some());
}
