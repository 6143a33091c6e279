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
                let mut e = e.clone();
                if kind == "plugins" && !same_version {
                    drop_read_only_shorthands(&mut e, &ours);
                }
                // Kong 3.8+ fills the certificate's transient `snis` (input only) with `null` on a select;
                // Sluice's export leaves it out (docs/differences.md, "Declarative config").
                if kind == "certificates" && e["snis"].is_null() && ours.get("snis").is_none() {
                    e.as_object_mut().map(|m| m.remove("snis"));
                }
                diff(&e, &ours, same_version, &format!("{kind} {id}"), &mut found);
            }
        }
        assert!(found.is_empty(), "{name}:\n{}", found.join("\n"));
    }
}

/// Removes from an older Kong's plugin the config fields that Kong 3.9 reads as `shorthand_fields` and
/// does not write back (session's `cookie_lifetime`, ... of Kong 3.0–3.1), when `ours` has none either:
/// their values live on in the fields they stand for, which `diff` compares (see
/// `old_session_fields_become_the_fields_kong_3_9_gives_them`).
fn drop_read_only_shorthands(kong: &mut serde_json::Value, ours: &serde_json::Value) {
    let table = fixture("kong-3.9-plugin-schemas.txt");
    let plugin = kong["name"].as_str().unwrap_or_default().to_string();
    let Some(config) = kong["config"].as_object_mut() else {
        return;
    };
    for line in table.lines().filter(|l| l.ends_with(" shorthand")) {
        let mut words = line.split(' ');
        let (Some(name), Some(field)) = (words.next(), words.next()) else {
            continue;
        };
        if name == plugin && ours["config"].get(field).is_none() {
            config.remove(field);
        }
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

/// A Kong 3.1 session config (the fields of lua-resty-session 3) loads as Kong 3.9 reads it through its
/// `shorthand_fields` (`kong/plugins/session/schema.lua`): `cookie_lifetime` is `rolling_timeout`,
/// `cookie_discard` `stale_ttl`, `cookie_persistent` `remember`, `cookie_httponly` `cookie_http_only`,
/// `cookie_samesite: off` is `Lax`, `cookie_renew` is dropped, and `cookie_idletime: null` (its default,
/// so every 3.0–3.1 export has it) is an `idling_timeout` of 0, no idle limit, not 3.9's default 900.
#[test]
fn old_session_fields_become_the_fields_kong_3_9_gives_them() {
    let name = "kong-3.1-db-export.yaml";
    let doc = export(&load(name, &fixture(name)));
    let session = doc["plugins"]
        .as_array()
        .and_then(|l| l.iter().find(|p| p["name"] == "session"))
        .expect("a session plugin");
    let config = &session["config"];
    let want = serde_json::json!({
        "rolling_timeout": 3600, "idling_timeout": 0, "stale_ttl": 10, "remember": true,
        "cookie_http_only": true, "cookie_same_site": "Lax", "cookie_name": "fidelity",
    });
    let mut found = Vec::new();
    for (key, value) in want.as_object().unwrap() {
        diff(value, &config[key], false, key, &mut found);
    }
    for old in [
        "cookie_lifetime",
        "cookie_idletime",
        "cookie_renew",
        "cookie_samesite",
    ] {
        if config.get(old).is_some() {
            found.push(format!("{old} written back"));
        }
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}

/// Kong 1.5's `db_export` (`_format_version: "1.1"`, no `null` fields: 1.5 read rows without `nulls`)
/// writes each plugin's `run_on` (service mesh, dropped in 2.0). Kong 3.9 has no such field and refuses
/// the file with an `unknown field` per plugin, and so does Sluice, with nothing else to say: without
/// `run_on` the same file loads, migrates its regex paths and round-trips.
#[test]
fn kong_1_5_export_is_refused_for_run_on_alone_and_loads_without_it() {
    let name = "kong-1.5-db-export.yaml";
    let text = fixture(name);
    let doc = declarative::to_document(&text).expect("YAML");
    let errors = declarative::parse_value(doc, &Registry::builtin())
        .map(|_| String::new())
        .unwrap_or_else(|e| e.to_string());
    let lines: Vec<&str> = errors.lines().filter(|l| l.contains("): ")).collect();
    assert_eq!(
        lines.len(),
        text.matches("\n  run_on: first").count(),
        "{errors}"
    );
    assert!(
        lines
            .iter()
            .all(|l| l.ends_with("): run_on: unknown field")),
        "{errors}"
    );
    let without = without_run_on(&text);
    let config = load(name, &without);
    let doc = export(&config);
    let paths = doc["routes"][0]["paths"].clone();
    assert_eq!(paths, serde_json::json!([r"~/users/\d+/orders"]), "{name}");
    let again = load(name, &serde_json::to_string(&doc).unwrap());
    assert_eq!(entities(&again), entities(&config), "{name}");
}

/// A Kong 1.5 export without its plugins' `run_on` lines, what a user gives Kong 3.x.
pub fn without_run_on(text: &str) -> String {
    text.lines()
        .filter(|l| *l != "  run_on: first")
        .map(|l| format!("{l}\n"))
        .collect()
}
