//! PostgreSQL's refusals of a write → Kong's DAO errors, with Kong's messages and `fields`.
//!
//! Constraint names are PostgreSQL's defaults for `000_base.sql`'s columns (`routes_service_fkey`,
//! `services_name_key`, `plugins_cache_key_key`, `services_pkey`), so the column, and from it the field and
//! the referenced kind, is read back from the name.

use crate::tables;
use serde_json::{json, Map, Value};
use sluice_model::declarative::kinds::Kind;
use sluice_model::writes::WriteError;
use tokio_postgres::error::SqlState;

/// The write's error for `e`, raised while writing `entity` of `kind` (or deleting one of `kind`).
pub fn to_write_error(e: tokio_postgres::Error, kind: Kind, entity: Option<&Value>) -> WriteError {
    let Some(db) = e.as_db_error() else {
        return WriteError::Unavailable(format!("the database connection failed: {e}"));
    };
    let table = db.table().unwrap_or_default();
    let constraint = db.constraint().unwrap_or_default();
    let null = Value::Null;
    let entity = entity.unwrap_or(&null);
    match db.code() {
        c if *c == SqlState::UNIQUE_VIOLATION => unique(kind, table, constraint, entity),
        c if *c == SqlState::FOREIGN_KEY_VIOLATION => foreign(kind, table, constraint, entity),
        _ => WriteError::Internal(format!("{e}")),
    }
}

fn unique(kind: Kind, table: &str, constraint: &str, entity: &Value) -> WriteError {
    if constraint == format!("{table}_pkey") {
        let id = entity["id"].as_str().unwrap_or_default();
        return WriteError::PrimaryKey(format!("primary key violation on key '{{id=\"{id}\"}}'"));
    }
    let column = constraint
        .strip_prefix(table)
        .and_then(|c| c.strip_prefix('_'))
        .and_then(|c| c.strip_suffix("_key"))
        .unwrap_or(constraint);
    let fields: Vec<&str> = match column {
        "cache_key" => tables::cache_key_fields(kind).unwrap_or(&[]).to_vec(),
        other => vec![other],
    };
    let mut map = Map::new();
    for f in fields {
        if !entity[f].is_null() {
            map.insert(f.to_string(), entity[f].clone());
        }
    }
    let value = Value::Object(map);
    WriteError::Unique {
        message: format!("UNIQUE violation detected on '{}'", lua(&value)),
        fields: value,
    }
}

fn foreign(kind: Kind, table: &str, constraint: &str, entity: &Value) -> WriteError {
    // The constraint belongs to the referencing table: `routes_service_fkey`.
    let field = constraint
        .strip_prefix(table)
        .and_then(|c| c.strip_prefix('_'))
        .and_then(|c| c.strip_suffix("_fkey"))
        .unwrap_or_default();
    if table != kind.key() {
        // Deleting `kind` is blocked by a row of `table` (a RESTRICT rule).
        return WriteError::ForeignKey {
            message: format!(
                "an existing '{table}' entity references this '{}' entity",
                kind.key()
            ),
            fields: json!({ "@referenced_by": table }),
        };
    }
    let parent = kind
        .references()
        .iter()
        .find(|fk| fk.field == field)
        .map(|fk| fk.parent.key())
        .unwrap_or(field);
    let message = format!(
        "the foreign key '{}' does not reference an existing '{parent}' entity.",
        lua(&entity[field])
    );
    WriteError::ForeignKey {
        fields: json!({ field: message }),
        message,
    }
}

/// A value as Kong's Lua pretty-printer writes a key: `{name="x"}`, `{id="..."}`, keys sorted.
pub fn lua(v: &Value) -> String {
    match v {
        Value::String(s) => format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\"")),
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            let parts: Vec<String> = keys
                .iter()
                .map(|k| format!("{k}={}", lua(&m[*k])))
                .collect();
            format!("{{{}}}", parts.join(","))
        }
        Value::Array(items) => {
            let parts: Vec<String> = items.iter().map(lua).collect();
            format!("{{{}}}", parts.join(","))
        }
        other => other.to_string(),
    }
}
