//! [`Config`] → Kong declarative document (`GET /config`, the store). Flat: every entity at top level, foreign
//! keys by id, `_transform: false` because basic-auth passwords are already hashed.

use crate::Config;
use serde::Serialize;

mod yaml11;
use serde_json::{Map, Value};

/// Visits every entity of the flat export in order, as (top-level key, entity JSON), one at a time, so a
/// caller that writes entities out (the store) never holds a second copy of a large config.
pub fn for_each_entity(config: &Config, f: impl FnMut(&'static str, Value)) {
    for_each_entity_of(config, |_| true, f);
}

/// [`for_each_entity`] over the kinds whose key `keep` accepts; the others are skipped before they are
/// serialized (a hybrid node rehashing only the routes exports only the routes).
pub fn for_each_entity_of(
    config: &Config,
    keep: impl Fn(&str) -> bool,
    mut f: impl FnMut(&'static str, Value),
) {
    fn each<T: Serialize>(key: &'static str, items: &[T], f: &mut Visit<'_>) {
        if (f.keep)(key) {
            for item in items {
                (f.visit)(key, serde_json::to_value(item).unwrap_or(Value::Null));
            }
        }
    }
    // A certificate's SNIs are their own entities in the flat form.
    let mut visit = |key: &'static str, mut v: Value| {
        if key == "certificates" {
            if let Value::Object(m) = &mut v {
                m.remove("snis");
            }
        }
        f(key, v)
    };
    let mut visit = Visit {
        keep: &keep,
        visit: &mut visit,
    };
    crate::entities::each_entity_list!(config, each, &mut visit);
}

/// What [`for_each_entity_of`] hands each list: the kind filter and the visitor.
struct Visit<'a> {
    keep: &'a dyn Fn(&str) -> bool,
    visit: &'a mut dyn FnMut(&'static str, Value),
}

/// The config as a flat declarative document; parsing it again yields an equal config.
pub fn export(config: &Config) -> Value {
    Value::Object(export_of(config, |_| true))
}

/// The entries of [`export`] whose top-level key `keep` accepts (`_format_version` and `_transform`
/// included), exporting nothing else. A kind without entities has no entry, as in [`export`].
pub fn export_of(config: &Config, keep: impl Fn(&str) -> bool) -> Map<String, Value> {
    let mut doc = Map::new();
    if keep("_format_version") {
        doc.insert(
            "_format_version".into(),
            config.format_version.clone().into(),
        );
    }
    if keep("_transform") {
        doc.insert("_transform".into(), false.into());
    }
    for_each_entity_of(config, keep, |key, v| {
        if let Value::Array(items) = doc.entry(key).or_insert_with(|| Value::Array(Vec::new())) {
            items.push(v);
        }
    });
    doc
}

/// [`export`] as YAML, with foreign keys as plain ids (`service: <id>`), as Kong's file emitter writes
/// them (`kong config db_export`, a DB-less node's `GET /config`). [`export`] keeps them as `{id: ...}`,
/// the shape of Kong's hybrid payload, which expands them. Strings YAML 1.1 would misread are quoted
/// for Kong's reader ([`yaml11`]).
pub fn export_yaml(config: &Config) -> String {
    let mut doc = export(config);
    for (key, list) in doc.as_object_mut().into_iter().flatten() {
        let Some(kind) = super::kinds::Kind::from_key(key) else {
            continue;
        };
        for entity in list.as_array_mut().into_iter().flatten() {
            for fk in kind.references() {
                if let Some(slot) = entity.get_mut(fk.field) {
                    if let Some(id) = slot.get("id").cloned() {
                        *slot = id;
                    }
                }
            }
        }
    }
    yaml11::for_yaml11(&serde_yaml::to_string(&doc).unwrap_or_default())
}
