//! Kong's rules for `sync_rate`.

use crate::registry::Registry;

fn check(config: &str) -> Result<(), String> {
    let yaml =
        format!("_format_version: \"3.0\"\nplugins:\n- name: rate-limiting\n  config: {config}\n");
    sluice_model::declarative::parse(&yaml, &Registry::builtin())
        .map(|_| ())
        .map_err(|e| format!("{e:?}"))
}

#[test]
fn sync_rate_is_kongs() {
    let redis = "policy: redis, redis: {host: 127.0.0.1}";
    check(&format!("{{minute: 1, {redis}, sync_rate: -1}}")).unwrap();
    check(&format!("{{minute: 1, {redis}, sync_rate: 0.02}}")).unwrap();
    check(&format!("{{minute: 1, {redis}, sync_rate: 10}}")).unwrap();
    for bad in ["0", "0.01", "-2"] {
        let err = check(&format!("{{minute: 1, {redis}, sync_rate: {bad}}}")).unwrap_err();
        assert!(
            err.contains("sync_rate must be greater than 0.02, or -1 to disable"),
            "{bad}: {err}"
        );
    }
    let err = check("{minute: 1, sync_rate: 1}").unwrap_err();
    assert!(
        err.contains("sync_rate can only be used with the redis policy"),
        "{err}"
    );
}

/// The exported `redis` record and flat `redis_*` fields of the one rate-limiting plugin in `config`.
fn exported_redis(config: &str) -> serde_json::Value {
    let yaml =
        format!("_format_version: \"3.0\"\nplugins:\n- name: rate-limiting\n  config: {config}\n");
    let parsed = sluice_model::declarative::parse(&yaml, &Registry::builtin()).unwrap();
    let doc = sluice_model::declarative::export(&parsed);
    doc["plugins"][0]["config"].clone()
}

/// Kong writes each flat `redis_*` field given through to the `redis` record, and a select (an export)
/// fills the flat fields back from the record: both always agree. Kong 3.9 refuses a document where they
/// disagree ("both deprecated and new field are used but their values mismatch"), so an export with the
/// record's defaults beside the flat fields given could not be loaded back into Kong.
#[test]
fn flat_redis_fields_and_the_record_agree_in_the_export() {
    let c = exported_redis(
        "{second: 10, policy: redis, redis_host: redis.internal, redis_port: 6380, redis_database: 1}",
    );
    let pairs = [
        ("redis_host", "host"),
        ("redis_port", "port"),
        ("redis_database", "database"),
        ("redis_timeout", "timeout"),
        ("redis_ssl", "ssl"),
        ("redis_password", "password"),
        ("redis_server_name", "server_name"),
    ];
    for (flat, field) in pairs {
        assert_eq!(c[flat], c["redis"][field], "{flat} vs redis.{field}: {c}");
    }
    assert_eq!(c["redis"]["host"], "redis.internal");
    assert_eq!(c["redis"]["port"], 6380);
    assert_eq!(c["redis"]["database"], 1);
    // Without any redis field, the flat fields show the record's defaults, as Kong's export does.
    let c = exported_redis("{second: 10}");
    assert_eq!(c["redis_port"], 6379, "{c}");
    assert_eq!(c["redis_timeout"], 2000, "{c}");
    assert_eq!(c["redis_host"], serde_json::Value::Null, "{c}");
}
