//! One entity validated on its own, for DB mode's Admin writes: the same per-kind steps a declarative load
//! runs (the `url` shorthand, target normalization, generated keys, the schema with its defaults, the
//! plugin's config, basic-auth password hashing), then the typed entity serialized as the store and the
//! Admin API keep it. References are given already resolved (`{"id": ...}`); whether they exist and
//! whether unique fields are free is the database's to check, in the write's own transaction.

use super::kinds::Kind;
use super::{prepare, typed};
use crate::schema::FieldError;
use crate::{records, PluginRegistry};
use serde_json::{Map, Value};
use uuid::Uuid;

/// A valid entity, ready to be written.
#[derive(Debug, Clone)]
pub struct Validated {
    /// The entity as the Admin API returns it.
    pub value: Value,
    /// The same, serialized (what the store and [`super::from_store`] read).
    pub body: Vec<u8>,
    /// Natural keys, e.g. `("name", "svc-a")`.
    pub unique: Vec<(&'static str, String)>,
    /// References as (field, referenced id).
    pub foreign: Vec<(&'static str, Uuid)>,
}

/// Validates `body` as an entity of `kind` with primary key `id`. `refs` override fields of the body
/// (resolved foreign keys, a nested path's parent). `hash_password`: a basic-auth password in the body is
/// plain text and is hashed (false when a PATCH left the stored, hashed one in place).
pub fn validate_one(
    kind: Kind,
    mut body: Map<String, Value>,
    id: Uuid,
    mut refs: Vec<(&'static str, Value)>,
    registry: &dyn PluginRegistry,
    hash_password: bool,
) -> Result<Validated, Vec<FieldError>> {
    let mut errors = Vec::new();
    prepare::before_validation(kind, &mut body, registry, &mut errors);
    if !errors.is_empty() {
        return Err(errors);
    }
    refs.push(("id", Value::String(id.to_string())));
    let mut normalized = kind.schema().validate_with(&Value::Object(body), &refs)?;
    if kind == Kind::Plugin {
        prepare::plugin_config(&mut normalized, registry, &mut errors);
        if !errors.is_empty() {
            return Err(errors);
        }
    }
    if kind == Kind::BasicAuth && hash_password {
        prepare::hash_password(&mut normalized);
    }
    let mut assembler = typed::Assembler::new("3.0".into(), std::iter::once(kind));
    assembler.add(kind, "", normalized).map_err(|e| vec![e])?;
    let config = assembler.finish();
    let mut out = None;
    records::for_each_record(&config, |r| {
        out = Some(Validated {
            value: serde_json::from_slice(&r.body).unwrap_or(Value::Null),
            body: r.body,
            unique: r.unique.iter().map(|(f, v)| (*f, v.to_string())).collect(),
            foreign: r.foreign,
        })
    });
    out.ok_or_else(|| vec![FieldError::entity("the entity could not be built")])
}
