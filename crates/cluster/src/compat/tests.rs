//! Kong's compatibility rules: version pairs, plugin sets and versions, filters, status names.

use super::*;

fn plugins(list: &[(&str, Option<&str>)]) -> Vec<PluginInfo> {
    list.iter()
        .map(|(n, v)| PluginInfo {
            name: (*n).into(),
            version: v.map(Into::into),
        })
        .collect()
}

fn configured(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|s| (*s).to_owned()).collect()
}

#[test]
fn status_values_are_kongs() {
    let names: Vec<&str> = SyncStatus::ALL.iter().map(|s| s.as_str()).collect();
    assert_eq!(
        names,
        [
            "unknown",
            "normal",
            "kong_version_incompatible",
            "plugin_set_incompatible",
            "plugin_version_incompatible",
            "filter_set_incompatible"
        ]
    );
    for s in SyncStatus::ALL {
        assert_eq!(SyncStatus::parse(s.as_str()), Some(s));
        assert_eq!(serde_json::to_value(s).unwrap(), s.as_str());
    }
}

#[test]
fn reads_major_minor_like_kong() {
    assert_eq!(major_minor("3.9.1"), Some((3, 9)));
    assert_eq!(major_minor("3.10.0.2-enterprise"), Some((3, 10)));
    assert_eq!(major_minor("3.9"), None);
    assert_eq!(major_minor("v3.9.1"), None);
    assert_eq!(major_minor("3.9.x"), None);
}

#[test]
fn kong_version_rules_and_messages() {
    assert_eq!(check_version("3.9.1", "3.9.0"), Ok(()));
    assert_eq!(
        check_version("3.9.1", "3.4.2"),
        Ok(()),
        "older DP minor is fine"
    );
    let err = |cp, dp| check_version(cp, dp).unwrap_err();
    let e = err("3.9.1", "3.10.0");
    assert_eq!(e.status, SyncStatus::KongVersionIncompatible);
    assert_eq!(
        e.message,
        "data plane version 3.10.0 is incompatible with older control plane version 3.9.1"
    );
    assert_eq!(
        err("3.9.1", "2.8.4").message,
        "data plane version 2.8.4 is incompatible with control plane version 3.9.1 (3.x.y are accepted)"
    );
    assert_eq!(
        err("3.9.1", "dev").message,
        "data plane version is incompatible with control plane version 3.9.1 (3.x.y are accepted)"
    );
    assert_eq!(
        err("dev", "3.9.1").message,
        "data plane version 3.9.1 is incompatible with control plane version"
    );
}

#[test]
fn configured_plugins_must_be_on_the_dp() {
    let cp = plugins(&[
        ("acl", Some("3.9.1")),
        ("custom", None),
        ("key-auth", Some("3.9.1")),
    ]);
    let dp = plugin_map(&plugins(&[("key-auth", Some("3.9.0"))]));
    // unused plugins may be missing
    assert_eq!(
        check_configuration(&cp, &configured(&["key-auth"]), &dp, None),
        Ok(())
    );
    let e = check_configuration(&cp, &configured(&["acl", "key-auth"]), &dp, None).unwrap_err();
    assert_eq!(e.status, SyncStatus::PluginSetIncompatible);
    assert_eq!(
        e.message,
        "configured acl plugin 3.9.1 is missing from data plane"
    );
    let e = check_configuration(&cp, &configured(&["custom"]), &dp, None).unwrap_err();
    assert_eq!(
        e.message,
        "configured custom plugin is missing from data plane"
    );
    // a configured plugin the CP does not have is not checked (Kong walks the CP's list)
    assert_eq!(
        check_configuration(&cp, &configured(&["unknown"]), &dp, None),
        Ok(())
    );
}

#[test]
fn plugin_versions_major_equal_and_dp_minor_not_newer() {
    let cp = plugins(&[
        ("acl", Some("3.9.1")),
        ("opentelemetry", Some("3.9.1")),
        ("x", Some("1.0.0")),
    ]);
    let used = configured(&["acl", "opentelemetry", "x"]);
    let check = |dp: &[(&str, Option<&str>)]| {
        check_configuration(&cp, &used, &plugin_map(&plugins(dp)), None)
    };
    assert_eq!(
        check(&[
            ("acl", Some("3.4.0")),
            ("opentelemetry", Some("3.9.1")),
            ("x", None)
        ]),
        Ok(())
    );
    let e = check(&[
        ("acl", Some("3.10.0")),
        ("opentelemetry", Some("3.9.1")),
        ("x", None),
    ])
    .unwrap_err();
    assert_eq!(e.status, SyncStatus::PluginVersionIncompatible);
    assert_eq!(e.message, "configured data plane acl plugin version 3.10.0 is different to control plane plugin version 3.9.1");
    let e = check(&[
        ("acl", Some("2.9.1")),
        ("opentelemetry", Some("3.9.1")),
        ("x", None),
    ])
    .unwrap_err();
    assert_eq!(e.status, SyncStatus::PluginVersionIncompatible);
    // opentelemetry 0.1.x on the DP is always accepted; other 0.x versions are not
    assert_eq!(
        check(&[
            ("acl", Some("3.9.1")),
            ("opentelemetry", Some("0.1.0")),
            ("x", None)
        ]),
        Ok(())
    );
    assert!(check(&[
        ("acl", Some("3.9.1")),
        ("opentelemetry", Some("0.2.0")),
        ("x", None)
    ])
    .is_err());
    // an unreadable version is not compared
    assert_eq!(check(&[("acl", Some("three")), ("opentelemetry", Some("3.9.1")), ("x", Some("9.9.9"))]).map_err(|e| e.message),
               Err("configured data plane x plugin version 9.9.9 is different to control plane plugin version 1.0.0".into()));
}

#[test]
fn wasm_filters_must_be_on_the_dp() {
    let cp_filters = configured(&["a", "b", "c"]);
    let dp_filters = configured(&["b"]);
    let e = check_configuration(
        &[],
        &BTreeSet::new(),
        &PluginMap::new(),
        Some((&cp_filters, &dp_filters)),
    )
    .unwrap_err();
    assert_eq!(e.status, SyncStatus::FilterSetIncompatible);
    assert_eq!(
        e.message,
        "data plane is missing one or more wasm filters (a, c)"
    );
}
