//! Flattens a declarative document into a list of raw entities with their parents and input positions.

use super::kinds::Kind;
use crate::schema::FieldError;
use serde_json::{Map, Value};

/// One entity as given, before validation.
#[derive(Debug, Clone)]
pub struct Raw {
    pub kind: Kind,
    /// Position in the input, e.g. `services[0].routes[1]`.
    pub path: String,
    /// The entity's own fields (nested children removed, `_comment`/`_ignore` stripped).
    pub value: Map<String, Value>,
    /// The foreign-key field set by nesting, and the index of the parent in [`Collected::raws`].
    pub parent: Option<(&'static str, usize)>,
}

/// The flattened document.
pub struct Collected {
    pub format_version: String,
    pub transform: bool,
    pub raws: Vec<Raw>,
}

/// Keys allowed anywhere that carry no config.
fn is_meta(key: &str) -> bool {
    matches!(key, "_comment" | "_ignore")
}

/// Kong's types for the meta keys: `_comment` a string, `_ignore` an array (of anything).
fn check_meta(key: &str, value: &Value, path: &str, errors: &mut Vec<FieldError>) {
    let field = || match path {
        "" => key.to_string(),
        p => format!("{p}.{key}"),
    };
    match (key, value) {
        ("_comment", Value::String(_) | Value::Null)
        | ("_ignore", Value::Array(_) | Value::Null) => {}
        ("_comment", _) => errors.push(FieldError::new(field(), "expected a string")),
        ("_ignore", _) => errors.push(FieldError::new(field(), "expected an array")),
        _ => {}
    }
}

pub fn collect(doc: Value, errors: &mut Vec<FieldError>) -> Collected {
    let mut out = Collected {
        format_version: String::new(),
        transform: true,
        raws: Vec::new(),
    };
    let Value::Object(top) = doc else {
        errors.push(FieldError::new("@document", "expected an object"));
        return out;
    };
    match top.get("_format_version") {
        Some(Value::String(v)) if matches!(v.as_str(), "1.1" | "2.1" | "3.0") => {
            out.format_version = v.clone()
        }
        Some(Value::String(_)) => {
            errors.push(FieldError::new(
                "_format_version",
                "expected one of: 1.1, 2.1, 3.0",
            ));
        }
        Some(_) => errors.push(FieldError::new("_format_version", "expected a string")),
        None => errors.push(FieldError::new("_format_version", "required field missing")),
    }
    match top.get("_transform") {
        None | Some(Value::Null) => {}
        Some(Value::Bool(b)) => out.transform = *b,
        Some(_) => errors.push(FieldError::new("_transform", "expected a boolean")),
    }
    for (key, value) in top {
        check_meta(&key, &value, "", errors);
        if key.starts_with('_') {
            if !matches!(
                key.as_str(),
                "_format_version" | "_transform" | "_comment" | "_ignore" | "_workspace" | "_info"
            ) {
                errors.push(FieldError::new(key, "unknown field"));
            }
            continue;
        }
        match Kind::from_key(&key) {
            Some(kind) => collect_list(kind, value, &key, None, &mut out.raws, errors),
            None => errors.push(FieldError::new(key, "unknown field")),
        }
    }
    out
}

fn collect_list(
    kind: Kind,
    list: Value,
    path: &str,
    parent: Option<(&'static str, usize)>,
    raws: &mut Vec<Raw>,
    errors: &mut Vec<FieldError>,
) {
    let items = match list {
        Value::Array(items) => items,
        Value::Null => return,
        _ => {
            errors.push(FieldError::new(path, "expected an array"));
            return;
        }
    };
    for (i, item) in items.into_iter().enumerate() {
        let ipath = format!("{path}[{i}]");
        let mut value = match item {
            Value::Object(m) => m,
            // Kong accepts `snis: ["a.example"]` under a certificate.
            Value::String(name) if kind == Kind::Sni => {
                let mut m = Map::new();
                m.insert("name".into(), Value::String(name));
                m
            }
            _ => {
                errors.push(FieldError::new(ipath, "expected a record"));
                continue;
            }
        };
        for (k, v) in value.iter().filter(|(k, _)| is_meta(k)) {
            check_meta(k, v, &ipath, errors);
        }
        value.retain(|k, _| !is_meta(k));
        let mut nested = Vec::new();
        for nest in kind.nests() {
            if let Some(v) = value.remove(nest.child.key()) {
                nested.push((nest.child, nest.field, v));
            }
        }
        let index = raws.len();
        raws.push(Raw {
            kind,
            path: ipath.clone(),
            value,
            parent,
        });
        for (child, field, v) in nested {
            let cpath = format!("{ipath}.{}", child.key());
            collect_list(child, v, &cpath, Some((field, index)), raws, errors);
        }
    }
}
