//! [`Config`] → Kong declarative document (`GET /config`, the store). Flat: every entity at top level, foreign
//! keys by id, `_transform: false` because basic-auth passwords are already hashed.

use crate::Config;
use serde_json::Value;

/// The config as a flat declarative document; parsing it again yields an equal config.
pub fn export(config: &Config) -> Value {
    let mut doc = serde_json::to_value(config).unwrap_or(Value::Null);
    if let Value::Object(m) = &mut doc {
        m.insert("_transform".into(), false.into());
        if let Some(Value::Array(certs)) = m.get_mut("certificates") {
            for c in certs {
                if let Value::Object(c) = c {
                    c.remove("snis");
                }
            }
        }
        m.retain(|k, v| k.starts_with('_') || v.as_array().is_some_and(|a| !a.is_empty()));
    }
    doc
}

/// [`export`] as YAML.
pub fn export_yaml(config: &Config) -> String {
    serde_yaml::to_string(&export(config)).unwrap_or_default()
}
