//! Ids, references, validation, uniqueness and hashing over the collected entities.

use super::collect::{Collected, Raw};
use super::kinds::Kind;
use super::prepare;
use super::typed;
use crate::errors::{ConfigErrors, EntityError};
use crate::schema::FieldError;
use crate::{Config, PluginRegistry};
use serde_json::{Map, Value};
use std::collections::HashMap;
use uuid::Uuid;

/// Namespace for ids derived from entity identities (a fixed random UUID: never change it, ids would move).
const ID_NAMESPACE: Uuid = Uuid::from_u128(0x5f1c_6a0e_9b43_4f3e_a2d7_31c8_0b5e_94a1);

struct Entity {
    raw: Raw,
    id: Uuid,
    errors: Vec<FieldError>,
    normalized: Value,
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
    let mut seen = Seen::new();
    let mut out = typed::Assembler::new(format_version);
    for e in entities.iter_mut() {
        prepare::before_validation(e.raw.kind, &mut e.raw.value, e.id, &mut e.errors);
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
        } else if !e.errors.is_empty() {
            errors.entities.push(entity_error(e));
        }
    }
    if !errors.is_empty() {
        return Err(std::mem::take(errors));
    }
    Ok(out.finish())
}

/// Validates the entity's raw value with its id set, without copying it: the id is inserted for the
/// walk and taken out again when the input did not give it (error reports show the input as given).
fn validate(e: &mut Entity) {
    let given_id = e.raw.value.contains_key("id");
    let mut input = std::mem::take(&mut e.raw.value);
    input.insert("id".into(), Value::String(e.id.to_string()));
    let input = Value::Object(input);
    match e.raw.kind.schema().validate(&input) {
        Ok(v) => e.normalized = v,
        Err(errs) => e.errors.extend(errs),
    }
    let Value::Object(mut input) = input else {
        unreachable!("wrapped an object above")
    };
    if !given_id {
        input.shift_remove("id");
    }
    e.raw.value = input;
}

/// Given ids are kept (and must be UUIDs); others derive from the entity's identity: its kind and its natural
/// key (name, username, ...) when it has one, else its parent's id and its position.
fn assign_ids(entities: &mut [Entity]) {
    for i in 0..entities.len() {
        let given = entities[i].raw.value.get("id").cloned();
        let id = match given {
            Some(Value::String(s)) => match Uuid::parse_str(&s) {
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
                let parent = raw
                    .parent
                    .map(|(_, p)| entities[p].id.to_string())
                    .unwrap_or_default();
                let natural = natural_key(raw);
                let identity = match natural {
                    Some(key) => format!("{}|{parent}|{key}", raw.kind.key()),
                    None => format!("{}|{parent}|{}", raw.kind.key(), raw.path),
                };
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

fn natural_key(raw: &Raw) -> Option<String> {
    let field = match raw.kind {
        Kind::Service | Kind::Route | Kind::Upstream | Kind::Sni => "name",
        Kind::Consumer => "username",
        Kind::KeyAuth => "key",
        Kind::BasicAuth => "username",
        Kind::Target => "target",
        _ => return None,
    };
    raw.value
        .get(field)
        .and_then(|v| v.as_str())
        .map(|s| format!("{field}={s}"))
}

/// Lookup of entities by id and by name fields, per kind.
struct NameIndex {
    map: HashMap<(Kind, String), Uuid>,
}

impl NameIndex {
    fn new(entities: &[Entity]) -> Self {
        let mut map = HashMap::new();
        for e in entities {
            map.entry((e.raw.kind, e.id.to_string())).or_insert(e.id);
            for field in e.raw.kind.name_fields() {
                if let Some(s) = e.raw.value.get(*field).and_then(|v| v.as_str()) {
                    map.entry((e.raw.kind, s.to_string())).or_insert(e.id);
                }
            }
        }
        NameIndex { map }
    }

    fn find(&self, kind: Kind, key: &str) -> Option<Uuid> {
        self.map.get(&(kind, key.to_string())).copied()
    }
}

/// Turns nesting and references by name or id into `{"id": ...}` foreign keys.
fn resolve_refs(entities: &mut [Entity], i: usize, index: &NameIndex) {
    if let Some((field, parent)) = entities[i].raw.parent {
        let pid = entities[parent].id;
        entities[i]
            .raw
            .value
            .insert(field.into(), serde_json::json!({ "id": pid.to_string() }));
    }
    let kind = entities[i].raw.kind;
    for (field, target) in kind.foreign_keys() {
        let Some(given) = entities[i].raw.value.get(*field).cloned() else {
            continue;
        };
        let key = match &given {
            Value::Null => continue,
            Value::String(s) => Some(s.clone()),
            Value::Object(m) => m
                .get("id")
                .or_else(|| m.get("name"))
                .or_else(|| m.get("username"))
                .and_then(|v| v.as_str())
                .map(String::from),
            _ => None,
        };
        let Some(key) = key else {
            entities[i].errors.push(FieldError::new(
                *field,
                "expected a name, an id, or {id = ...}",
            ));
            continue;
        };
        match index.find(*target, &key) {
            Some(id) => {
                entities[i]
                    .raw
                    .value
                    .insert((*field).into(), serde_json::json!({ "id": id.to_string() }));
            }
            None => entities[i].errors.push(FieldError::new(
                *field,
                format!("could not find {} '{key}'", target.singular()),
            )),
        }
    }
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
            raw = Value::Object(e.raw.value.clone());
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
            Kind::KeyAuth => keys.extend(s("key").map(|n| ("key", n))),
            Kind::BasicAuth => keys.extend(s("username").map(|n| ("username", n))),
            Kind::Target => keys.push(("target", format!("{}|{}", v["upstream"], v["target"]))),
            Kind::Plugin => keys.push((
                "name",
                format!(
                    "{}|{}|{}|{}|{}",
                    v["name"], v["service"], v["route"], v["consumer"], v["instance_name"]
                ),
            )),
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

fn entity_error(e: &Entity) -> EntityError {
    let v = &e.raw.value;
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
