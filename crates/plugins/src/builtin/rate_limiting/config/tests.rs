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
