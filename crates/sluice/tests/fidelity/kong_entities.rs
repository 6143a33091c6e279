//! Every entity kind's schema against Kong 3.9.1's, field by field, as `kong_defaults.rs` does for plugin
//! configs: type, default, `required`, `one_of` and `between`. Kong's side is `kong-3.9-entity-schemas.txt`
//! (read from `kong/db/schema/entities/*.lua` and `kong/plugins/*/daos.lua` at 3.9.1 by
//! `kong_schema_reader.lua`); Sluice's is each kind's schema as `GET /schemas/{entity}` serves it.

use super::kong_defaults::{differences, rows_of, walk};
use sluice_model::declarative::kinds::ALL;
use std::collections::BTreeMap;

/// (kind, path prefix, what differs): differences kept on purpose.
const KEPT: &[(&str, &str, &str)] = &[
    // Kong's record defaults are the records of their fields' defaults; Sluice fills a record from its
    // fields' defaults: the same value, shown once per field in `GET /schemas/upstreams`.
    ("upstreams", "healthchecks", "default"),
    // A certificate's `snis`: Kong's Admin API takes names; Sluice's also takes the nested declarative
    // form (a list of SNI entities), so it is any JSON here.
    ("certificates", "snis", "type"),
    ("certificates", "snis[]", "missing"),
];

fn kept(kind: &str, path: &str, what: &str) -> bool {
    KEPT.iter()
        .any(|(k, p, w)| *k == kind && path.starts_with(p) && *w == what)
}

#[test]
fn every_entity_field_has_kongs_type_default_and_checks() {
    let kong = rows_of("kong-3.9-entity-schemas.txt");
    let mut ours = BTreeMap::new();
    for kind in ALL {
        walk(
            kind.key(),
            "",
            &kind.schema().to_kong_json()["fields"],
            &mut ours,
        );
    }
    let mut found = Vec::new();
    for ((kind, path), k) in &kong {
        if k.ty == "foreign" || !k.is_field(path) {
            continue;
        }
        let Some(o) = ours.get(&(kind.clone(), path.clone())) else {
            if !kept(kind, path, "missing") {
                found.push(format!("{kind} {path}: missing in Sluice"));
            }
            continue;
        };
        for what in differences(k, o)
            .into_iter()
            .filter(|w| !kept(kind, path, w))
        {
            found.push(format!("{kind} {path} {what}: Kong {k:?}, Sluice {o:?}"));
        }
    }
    assert!(
        found.is_empty(),
        "{} differences:\n{}",
        found.len(),
        found.join("\n")
    );
}
