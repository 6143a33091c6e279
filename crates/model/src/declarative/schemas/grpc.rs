//! Kong's `grpc` subschema of routes: what a route whose `protocols` are
//! `grpc`/`grpcs` may set (no `strip_path`, `methods`, `sources` or `destinations`; `strip_path` defaults
//! to false) and which matchers it needs. (That a grpc service has no `path` is one of the services'
//! entity checks.)

use crate::schema::FieldError;
use serde_json::{Map, Value};

/// Kong picks a route's subschema by its first protocol; the groups never mix, so any grpc one decides.
fn is_grpc(m: &Map<String, Value>) -> bool {
    m.get("protocols")
        .and_then(Value::as_array)
        .and_then(|p| p.first())
        .is_some_and(|p| p == "grpc" || p == "grpcs")
}

/// The grpc subschema's default: `strip_path` is false unless given.
pub(super) fn route_defaults(given: &Map<String, Value>, out: &mut Map<String, Value>) {
    if is_grpc(out) && given.get("strip_path").is_none_or(Value::is_null) {
        out.insert("strip_path".into(), Value::Bool(false));
    }
}

/// The grpc subschema's rules, with Kong's messages.
pub(super) fn route_checks(m: &Map<String, Value>) -> Result<(), Vec<FieldError>> {
    if !is_grpc(m) {
        return Ok(());
    }
    let set = |k: &str| match &m[k] {
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
        Value::Null => false,
        _ => true,
    };
    let mut errors = Vec::new();
    if m["strip_path"] == Value::Bool(true) {
        errors.push(FieldError::new(
            "strip_path",
            "cannot set 'strip_path' when 'protocols' is 'grpc' or 'grpcs'",
        ));
    }
    for field in ["methods", "sources", "destinations"] {
        if !m[field].is_null() {
            errors.push(FieldError::new(
                field,
                format!("cannot set '{field}' when 'protocols' is 'grpc' or 'grpcs'"),
            ));
        }
    }
    let tls = m["protocols"]
        .as_array()
        .is_some_and(|p| p.iter().any(|p| p == "grpcs"));
    let (matchers, name): (&[&str], _) = match tls {
        true => (&["hosts", "headers", "paths", "snis"], "grpcs"),
        false => (&["hosts", "headers", "paths"], "grpc"),
    };
    if !matchers.iter().any(|k| set(k)) {
        let list = matchers
            .iter()
            .map(|k| format!("'{k}'"))
            .collect::<Vec<_>>();
        errors.push(FieldError::entity(format!(
            "must set one of {} when 'protocols' is '{name}'",
            list.join(", ")
        )));
    }
    errors.is_empty().then_some(()).ok_or(errors)
}

#[cfg(test)]
mod tests;
