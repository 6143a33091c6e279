//! Ids, references, validation, uniqueness and hashing over the collected entities.

use super::collect::{Collected, Raw};
use super::kinds::Kind;
use super::prepare;
use super::typed;
use crate::errors::{ConfigErrors, EntityError};
use crate::schema::FieldError;
use crate::{Config, PluginRegistry};
use rustc_hash::FxHashMap as HashMap;
use serde_json::{Map, Value};
use uuid::Uuid;

mod refs;
use refs::{resolve_refs, NameIndex};

/// Namespace for ids derived from entity identities (a fixed random UUID: never change it, ids would move).
const ID_NAMESPACE: Uuid = Uuid::from_u128(0x5f1c_6a0e_9b43_4f3e_a2d7_31c8_0b5e_94a1);

struct Entity {
    raw: Raw,
    id: Uuid,
    errors: Vec<FieldError>,
    normalized: Value,
    /// Foreign keys set by nesting or resolved from names (as `{"id": ...}`), then values generated
    /// before validation (a key-auth key), in the order they were set: validation sees them in place of
    /// the raw fields, and error reports show the raw value with them.
    refs: Vec<(&'static str, Value)>,
    /// Validation ran, so error reports show a given id in its normalized form.
    validated: bool,
}

pub fn build(
    collected: Collected,
    registry: &dyn PluginRegistry,
    errors: &mut ConfigErrors,
) -> Result<Config, ConfigErrors> {
    let Collected {
        format_version,
        transform,
        raws,
    } = collected;
    let mut entities: Vec<Entity> = raws
        .into_iter()
        .map(|raw| Entity {
            raw,
            id: Uuid::nil(),
            errors: Vec::new(),
            normalized: Value::Null,
            refs: Vec::new(),
            validated: false,
        })
        .collect();

    assign_ids(&mut entities);
    let index = NameIndex::new(&entities);
    for i in 0..entities.len() {
        resolve_refs(&mut entities, i, &index);
    }
    // One pass in input order: each entity is validated, checked for uniqueness against those before it,
    // hashed, and turned into its typed form at once, so the normalized form of a large config is never
    // held whole. A valid entity's raw input is dropped once it is built; invalid ones keep theirs for the
    // error report.
    let mut seen = Seen::with_capacity_and_hasher(entities.len(), Default::default());
    let mut out = typed::Assembler::new(format_version, entities.iter().map(|e| e.raw.kind));
    for e in entities.iter_mut() {
        prepare::before_validation(e.raw.kind, &mut e.raw.value, registry, &mut e.errors);
        if e.errors.is_empty() {
            validate(e);
        }
        if e.errors.is_empty() && e.raw.kind == Kind::Plugin {
            prepare::plugin_config(&mut e.normalized, registry, &mut e.errors);
        }
        if e.errors.is_empty() && e.raw.kind == Kind::BasicAuth && transform {
            prepare::hash_password(&mut e.normalized);
        }
        check_unique(e, &mut seen);
        if e.errors.is_empty() && errors.entities.is_empty() {
            let normalized = std::mem::take(&mut e.normalized);
            if let Err(err) = out.add(e.raw.kind, &e.raw.path, normalized) {
                errors.document.push(err);
            }
            e.raw.value = Map::new();
            e.refs = Vec::new();
        } else if !e.errors.is_empty() {
            errors.entities.push(entity_error(e));
        }
    }
    if !errors.is_empty() {
        return Err(std::mem::take(errors));
    }
    Ok(out.finish())
}

/// Validates the entity's raw value with its id and references set, without copying or changing it.
fn validate(e: &mut Entity) {
    let input = Value::Object(std::mem::take(&mut e.raw.value));
    e.refs.push(("id", Value::String(e.id.to_string())));
    match e.raw.kind.schema().validate_with(&input, &e.refs) {
        Ok(v) => e.normalized = v,
        Err(errs) => e.errors.extend(errs),
    }
    e.refs.pop();
    e.validated = true;
    let Value::Object(input) = input else {
        unreachable!("wrapped an object above")
    };
    e.raw.value = input;
}

/// The entity as error reports show it: the input as given, with its references set and, once
/// validated, a given id in normalized form.
fn reported(e: &Entity) -> Map<String, Value> {
    let mut v = e.raw.value.clone();
    for (field, value) in &e.refs {
        v.insert((*field).into(), value.clone());
    }
    if e.validated && v.contains_key("id") {
        v.insert("id".into(), Value::String(e.id.to_string()));
    }
    v
}

/// Given ids are kept (and must be UUIDs); others derive from the entity's identity: its kind and its natural
/// key (name, username, ...) when it has one, else its parent's id and its position.
fn assign_ids(entities: &mut [Entity]) {
    // One buffer for every identity string: `<kind>|<parent id>|<field>=<natural key>` or `...|<path>`.
    let mut identity = String::with_capacity(128);
    for i in 0..entities.len() {
        let id = match entities[i].raw.value.get("id") {
            Some(Value::String(s)) => match Uuid::parse_str(s) {
                Ok(id) => id,
                Err(_) => {
                    entities[i]
                        .errors
                        .push(FieldError::new("id", "expected a valid UUID"));
                    Uuid::nil()
                }
            },
            Some(Value::Null) | None => {
                let raw = &entities[i].raw;
                identity.clear();
                identity.push_str(raw.kind.key());
                identity.push('|');
                if let Some((_, p)) = raw.parent {
                    let mut buf = Uuid::encode_buffer();
                    identity.push_str(entities[p].id.hyphenated().encode_lower(&mut buf));
                }
                identity.push('|');
                match natural_key(raw) {
                    Some((field, key)) => {
                        identity.push_str(field);
                        identity.push('=');
                        identity.push_str(key);
                    }
                    None => identity.push_str(&raw.path),
                }
                Uuid::new_v5(&ID_NAMESPACE, identity.as_bytes())
            }
            Some(_) => {
                entities[i]
                    .errors
                    .push(FieldError::new("id", "expected a string"));
                Uuid::nil()
            }
        };
        entities[i].id = id;
    }
}

/// The field that identifies an entity of this kind and its value, when given.
fn natural_key(raw: &Raw) -> Option<(&'static str, &str)> {
    let field = match raw.kind {
        Kind::Service | Kind::Route | Kind::Upstream | Kind::Sni => "name",
        Kind::Consumer => "username",
        Kind::KeyAuth | Kind::Jwt => "key",
        Kind::BasicAuth | Kind::HmacAuth => "username",
        Kind::Target => "target",
        Kind::OAuth2 => "client_id",
        _ => return None,
    };
    raw.value
        .get(field)
        .and_then(|v| v.as_str())
        .map(|s| (field, s))
}

/// Kong's unique constraints: natural keys per kind, ids per kind, plugin scope, target per upstream.
/// Natural keys seen so far, per kind and field.
type Seen = HashMap<(Kind, &'static str, String), ()>;

fn check_unique(e: &mut Entity, seen: &mut Seen) {
    {
        let kind = e.raw.kind;
        // Invalid entities still take part with their raw values, so a clash is reported even then.
        let raw;
        let v = if e.normalized.is_null() {
            raw = Value::Object(reported(e));
            &raw
        } else {
            &e.normalized
        };
        // Generated ids derive from the natural key, so only given ids can clash on their own.
        let mut keys: Vec<(&'static str, String)> = Vec::new();
        if e.raw.value.get("id").is_some_and(Value::is_string) {
            keys.push(("id", e.id.to_string()));
        }
        let s = |f: &str| v.get(f).and_then(|x| x.as_str()).map(String::from);
        match kind {
            Kind::Service | Kind::Route | Kind::Upstream | Kind::Sni => {
                keys.extend(s("name").map(|n| ("name", n)))
            }
            Kind::Consumer => {
                keys.extend(s("username").map(|n| ("username", n)));
                keys.extend(s("custom_id").map(|n| ("custom_id", n)));
            }
            Kind::KeyAuth | Kind::Jwt => keys.extend(s("key").map(|n| ("key", n))),
            Kind::BasicAuth | Kind::HmacAuth => keys.extend(s("username").map(|n| ("username", n))),
            Kind::Target => keys.push(("target", format!("{}|{}", v["upstream"], v["target"]))),
            Kind::OAuth2 => keys.extend(s("client_id").map(|n| ("client_id", n))),
            Kind::Plugin => keys.push(("name", plugin_scope(v))),
            _ => {}
        }
        for (field, value) in keys {
            if seen.insert((kind, field, value.clone()), ()).is_some() {
                let shown = if kind == Kind::Plugin || kind == Kind::Target {
                    v[field].as_str().unwrap_or_default().to_string()
                } else {
                    value
                };
                e.errors.push(FieldError::entity(format!(
                    "uniqueness violation: '{}' entity with {field} set to '{shown}' already declared",
                    kind.key()
                )));
            }
        }
    }
}

/// What makes a plugin instance unique: its name, scope and instance name, as one string.
fn plugin_scope(v: &Value) -> String {
    let mut key = String::with_capacity(128);
    for field in ["name", "service", "route", "consumer", "instance_name"] {
        // Scopes are `{"id": ...}` after validation; anything else is written out as JSON.
        match v[field].get("id").and_then(Value::as_str) {
            Some(id) => key.push_str(id),
            None => key.push_str(&v[field].to_string()),
        }
        key.push('|');
    }
    key
}

fn entity_error(e: &Entity) -> EntityError {
    let v = &reported(e);
    let name = ["name", "username", "custom_id"]
        .iter()
        .find_map(|f| v.get(*f).and_then(|x| x.as_str()))
        .map(String::from);
    let tags = v.get("tags").and_then(|t| t.as_array()).map(|a| {
        a.iter()
            .filter_map(|x| x.as_str().map(String::from))
            .collect()
    });
    EntityError {
        entity_type: e.raw.kind.singular(),
        entity_name: name,
        entity_id: v.get("id").and_then(|x| x.as_str()).map(String::from),
        entity_tags: tags,
        entity: Value::Object(v.clone()),
        path: e.raw.path.clone(),
        errors: e.errors.clone(),
    }
}
