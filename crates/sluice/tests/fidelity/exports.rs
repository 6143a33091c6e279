//! Each fixture loads through the declarative loader with this build's plugins and compiles into a proxy
//! snapshot (what `sluice config check`, `declarative_config` and `POST /config` run); `sluice config check`
//! accepts the file as it is; Sluice's export of it loads back into an equal config and holds no field
//! Kong 3.9 refuses.

use super::{fixture, fixture_path, kong_fields, BIN, FIXTURES};
use sluice_model::declarative::{self, export};
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
