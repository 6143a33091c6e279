//! Ids, references, validation (or reuse of the previous load's result), uniqueness and hashing over the
//! collected entities.

use super::collect::{Collected, Raw};
use super::kinds::Kind;
use super::prepare;
use super::typed;
use crate::errors::{ConfigErrors, EntityError};
use crate::schema::FieldError;
use crate::{Config, PluginRegistry};
use serde_json::{Map, Value};
use uuid::Uuid;

mod refs;
mod unique;
use super::reuse::{Entry, Previous, Reusable};
use refs::{resolve_refs, NameIndex};
use unique::Seen;

/// Namespace for ids derived from entity identities (a fixed random UUID: never change it, ids would move).
const ID_NAMESPACE: Uuid = Uuid::from_u128(0x5f1c_6a0e_9b43_4f3e_a2d7_31c8_0b5e_94a1);

struct Entity {
    raw: Raw,
    id: Uuid,
    errors: Vec<FieldError>,
    normalized: Value,
    /// Foreign keys set by nesting or resolved from names, in the order they were set: validation sees
    /// them (as `{"id": ...}`) in place of the raw fields, and error reports show the raw value with them.
    refs: Vec<(&'static str, Uuid)>,
    /// Validation ran, so error reports show a given id in its normalized form.
    validated: bool,
}

pub fn build(
    collected: Collected,
    registry: &dyn PluginRegistry,
    errors: &mut ConfigErrors,
    previous: Option<Previous<'_>>,
) -> Result<(Config, Reusable), ConfigErrors> {
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
    let mut next = match previous {
        Some(p) => p.reusable.next(entities.len()),
        None => Reusable::default().next(entities.len()),
    };
    let load = format!("{format_version}|{transform}");
    // One pass in input order: each entity is validated (or, unchanged since the previous load, copied
    // from it), checked for uniqueness against those before it, hashed, and turned into its typed form at
    // once, so the normalized form of a large config is never held whole. A valid entity's raw input is
    // dropped once it is built; invalid ones keep theirs for the error report.
    let mut seen = Seen::with_capacity_and_hasher(2 * entities.len(), Default::default());
    let mut out = typed::Assembler::new(format_version, entities.iter().map(|e| e.raw.kind));
    for e in entities.iter_mut() {
        let key = e
            .errors
            .is_empty()
            .then(|| next.key(&load, e.raw.kind, e.id, &e.refs, &e.raw.value));
        let hit = previous.zip(key).and_then(|(p, key)| {
            let entry = p
                .reusable
                .get(key)
                .filter(|h| h.kind == e.raw.kind && h.index < typed::count(p.config, h.kind))?;
            Some((key, p.config, entry))
        });
        // Its validation passed with this very input: only uniqueness could fail it now, and then it goes
        // the full way, which reports it.
        if let Some((key, from, entry)) =
            hit.filter(|(_, _, entry)| unique::claim_copy(e, &entry.unique, &mut seen, &next))
        {
            if errors.entities.is_empty() {
                match out.add_copy(e.raw.kind, from, entry.index, &entry.digest) {
                    Some(at) => {
                        next.count_copy(e.raw.kind, at);
                        let entry = Entry {
                            index: at,
                            ..entry.clone()
                        };
                        next.insert(key, entry);
                    }
                    None => errors.document.push(FieldError::new(
                        &e.raw.path,
                        "internal error building the config: the entity to reuse is gone",
                    )),
                }
                e.raw.value = Map::new();
                e.refs = Vec::new();
            }
            continue;
        }
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
        let own = (!e.normalized.is_null()).then(|| unique::keys(e.raw.kind, &e.normalized));
        unique::claim(e, own.as_deref(), &mut seen, &next);
        if e.errors.is_empty() && errors.entities.is_empty() {
            let normalized = std::mem::take(&mut e.normalized);
            match out.add(e.raw.kind, &e.raw.path, normalized) {
                Ok(added) => {
                    let unique = own.and_then(|own| unique::hashes(e.raw.kind, &own, &next));
                    if let (false, Some(key), Some(unique)) = (added.random, key, unique) {
                        let entry = Entry {
                            kind: e.raw.kind,
                            index: added.index,
                            digest: added.digest,
                            unique,
                        };
                        next.insert(key, entry);
                    }
                }
                Err(err) => errors.document.push(err),
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
    Ok((out.finish(), next))
}

/// Validates the entity's raw value with its id and references set, without copying or changing it.
fn validate(e: &mut Entity) {
    let input = Value::Object(std::mem::take(&mut e.raw.value));
    let mut refs = ref_values(&e.refs);
    refs.push(("id", Value::String(e.id.to_string())));
    match e.raw.kind.schema().validate_with(&input, &refs) {
        Ok(v) => e.normalized = v,
        Err(errs) => e.errors.extend(errs),
    }
    e.validated = true;
    let Value::Object(input) = input else {
        unreachable!("wrapped an object above")
    };
    e.raw.value = input;
}

/// References as the schema and error reports see them: `{"id": "<uuid>"}`.
fn ref_values(refs: &[(&'static str, Uuid)]) -> Vec<(&'static str, Value)> {
    refs.iter()
        .map(|(field, id)| (*field, serde_json::json!({ "id": id.to_string() })))
        .collect()
}

/// The entity as error reports show it: the input as given, with its references set and, once
/// validated, a given id in normalized form.
fn reported(e: &Entity) -> Map<String, Value> {
    let mut v = e.raw.value.clone();
    for (field, value) in ref_values(&e.refs) {
        v.insert(field.into(), value);
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
