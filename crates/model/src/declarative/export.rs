//! [`Config`] → Kong declarative document (`GET /config`, the store). Flat: every entity at top level, foreign
//! keys by id, `_transform: false` because basic-auth passwords are already hashed.

use crate::Config;
use serde::Serialize;
use serde_json::{Map, Value};

/// Visits every entity of the flat export in order, as (top-level key, entity JSON), one at a time, so a
/// caller that writes entities out (the store) never holds a second copy of a large config.
pub fn for_each_entity(config: &Config, mut f: impl FnMut(&'static str, Value)) {
    fn each<T: Serialize>(key: &'static str, items: &[T], f: &mut dyn FnMut(&'static str, Value)) {
        for item in items {
            f(key, serde_json::to_value(item).unwrap_or(Value::Null));
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
    crate::entities::each_entity_list!(config, each, &mut visit);
}

/// The config as a flat declarative document; parsing it again yields an equal config.
pub fn export(config: &Config) -> Value {
    let mut doc = Map::new();
    doc.insert(
        "_format_version".into(),
        config.format_version.clone().into(),
    );
    doc.insert("_transform".into(), false.into());
    for_each_entity(config, |key, v| {
        if let Value::Array(items) = doc.entry(key).or_insert_with(|| Value::Array(Vec::new())) {
            items.push(v);
        }
    });
    Value::Object(doc)
}

/// [`export`] as YAML.
pub fn export_yaml(config: &Config) -> String {
    serde_yaml::to_string(&export(config)).unwrap_or_default()
}
