//! Each fixture loads through the declarative loader with this build's plugins and compiles into a proxy
//! snapshot (what `sluice config check`, `declarative_config` and `POST /config` run); `sluice config check`
//! accepts the file as it is; Sluice's export of it loads back into an equal config and holds no field
//! Kong 3.9 refuses.

use super::{fixture, fixture_path, kong_fields, BIN, FIXTURES};
use sluice_model::declarative::{self, export, export_yaml};
use sluice_model::Config;
use sluice_plugins::Registry;
use sluice_proxy::Snapshot;
use std::sync::Arc;

/// Loads `text` as a user's file is loaded, and compiles it; panics with every error.
pub fn load(name: &str, text: &str) -> Config {
    let registry = Registry::builtin();
    let doc = declarative::to_document(text).unwrap_or_else(|e| panic!("{name}: {e}"));
    let config = declarative::parse_value(doc, &registry)
        .unwrap_or_else(|e| panic!("{name} does not load:\n{e}"));
    if let Err(e) = Snapshot::compile(Arc::new(config.clone()), &registry) {
        panic!("{name} does not compile: {e}");
    }
    config
}

#[test]
fn every_fixture_loads_and_compiles() {
    for (name, _) in FIXTURES {
        let c = load(name, &fixture(name));
        assert!(!c.services.is_empty() && !c.plugins.is_empty(), "{name}");
    }
}

#[test]
fn config_check_accepts_every_fixture_file() {
    for (name, _) in FIXTURES {
        let out = std::process::Command::new(BIN)
            .args(["config", "check"])
            .arg(fixture_path(name))
            .output()
            .expect("run sluice");
        let text = String::from_utf8_lossy(&out.stdout) + String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{name}: {text}");
        assert!(text.contains("valid"), "{name}: {text}");
    }
}

#[test]
fn exports_load_back_equal_and_hold_only_fields_kong_takes() {
    for (name, _) in FIXTURES {
        let config = load(name, &fixture(name));
        let doc = export(&config);
        assert_eq!(doc["_format_version"], "3.0", "{name}");
        let again = load(name, &serde_json::to_string(&doc).unwrap());
        assert_eq!(
            entities(&again),
            entities(&config),
            "{name}: the export loads back into another config"
        );
        assert_eq!(export(&again), doc, "{name}: the second export differs");
        let refused = kong_fields::refused(&doc);
        assert!(refused.is_empty(), "{name}: Kong 3.9 refuses {refused:?}");
    }
}

/// A config's entities, without the hash of the text it was read from.
fn entities(config: &Config) -> serde_json::Value {
    let mut v = serde_json::to_value(config).expect("serializable");
    v.as_object_mut().map(|m| m.remove("hash"));
    v
}

/// Sluice's `GET /config` after loading a Kong `db_export` keeps every entity with every field and value
/// (foreign keys as plain ids), but for route paths of a pre-3.0 file, which are migrated as Kong 3.x
/// migrates them (checked by routing in `live.rs`). Of a Kong 3.9 export (the version Sluice's schemas
/// follow) it is the same document: no field added either.
#[test]
fn exports_keep_every_field_and_value_of_a_kong_export() {
    for (name, version) in FIXTURES {
        if !name.starts_with("kong-") {
            continue;
        }
        let doc = declarative::to_document(&fixture(name)).expect("YAML");
        let again =
            declarative::to_document(&export_yaml(&load(name, &fixture(name)))).expect("YAML");
        let same_version = *version == "3.9";
        let mut found = Vec::new();
        for (kind, list) in doc.as_object().expect("a document") {
            let Some(list) = list.as_array() else {
                if same_version {
                    assert_eq!(again.get(kind), Some(&doc[kind]), "{name}: {kind}");
                }
                continue;
            };
            for e in list {
                let id = &e["id"];
                let ours = again[kind]
                    .as_array()
                    .and_then(|l| l.iter().find(|x| &x["id"] == id));
                let Some(mut ours) = ours.cloned() else {
                    found.push(format!("{kind} {id}: missing"));
                    continue;
                };
                if kind == "routes" && version.starts_with('2') {
                    ours["paths"] = e["paths"].clone();
                }
                diff(e, &ours, same_version, &format!("{kind} {id}"), &mut found);
            }
        }
        assert!(found.is_empty(), "{name}:\n{}", found.join("\n"));
    }
}

/// Every place where `ours` differs from `kong`, as `at.key: kong → ours`; keys only `ours` has count
/// when `added` is a difference.
fn diff(
    kong: &serde_json::Value,
    ours: &serde_json::Value,
    added: bool,
    at: &str,
    found: &mut Vec<String>,
) {
    use serde_json::Value;
    match (kong, ours) {
        (Value::Object(k), Value::Object(o)) => {
            for key in k.keys().chain(o.keys().filter(|x| !k.contains_key(*x))) {
                let null = Value::Null;
                let (a, b) = (k.get(key), o.get(key));
                match (a, b) {
                    (Some(a), Some(b)) => diff(a, b, added, &format!("{at}.{key}"), found),
                    (None, Some(_)) if !added => {}
                    _ => found.push(format!(
                        "{at}.{key}: {} → {}",
                        a.unwrap_or(&null),
                        b.unwrap_or(&null)
                    )),
                }
            }
        }
        (Value::Number(a), Value::Number(b)) if a.as_f64() == b.as_f64() => {}
        _ if kong != ours => found.push(format!("{at}: {kong} → {ours}")),
        _ => {}
    }
}
