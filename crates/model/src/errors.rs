//! Every error found in a declarative config, and the shapes Kong reports them in.
//!
//! One [`EntityError`] per entity that failed, each with all of its field errors; [`ConfigErrors::kong_fields`]
//! gives the nested `fields` object of Kong's code-14 response, [`ConfigErrors::flattened`] the
//! `flattened_errors` array of `?flatten_errors=1`, and `Display` one line per error for the CLI.

use crate::schema::FieldError;
use serde_json::{json, Map, Value};
use std::fmt;

/// The errors of one entity of the input.
#[derive(Debug, Clone, PartialEq)]
pub struct EntityError {
    /// Kong's singular entity name: `service`, `route`, `plugin`, ...
    pub entity_type: &'static str,
    pub entity_name: Option<String>,
    pub entity_id: Option<String>,
    pub entity_tags: Option<Vec<String>>,
    /// The entity as it was given.
    pub entity: Value,
    /// Where it stands in the input, e.g. `services[0].routes[1]`.
    pub path: String,
    pub errors: Vec<FieldError>,
}

/// Every error found in one declarative config; never empty when returned as an `Err`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ConfigErrors {
    /// Errors about the document itself (`_format_version`, unknown top-level keys, ...).
    pub document: Vec<FieldError>,
    pub entities: Vec<EntityError>,
}

impl ConfigErrors {
    pub fn is_empty(&self) -> bool {
        self.document.is_empty() && self.entities.is_empty()
    }

    /// The number of individual field errors.
    pub fn len(&self) -> usize {
        self.document.len() + self.entities.iter().map(|e| e.errors.len()).sum::<usize>()
    }

    /// Kong's nested `fields` object: the input's shape, with `{field: message}` where errors are and `null`
    /// for entities without errors in an array.
    pub fn kong_fields(&self) -> Value {
        let mut root = Value::Object(Map::new());
        for e in &self.document {
            set_message(&mut root, &e.field, &e.message);
        }
        for entity in &self.entities {
            let node = node_at(&mut root, &entity.path);
            for e in &entity.errors {
                set_message(node, &e.field, &e.message);
            }
        }
        root
    }

    /// Kong's `flattened_errors`: one object per entity with its type, name, id, tags, the entity, and
    /// `errors: [{type, field, message}]` (`type` is `entity` for cross-field errors).
    pub fn flattened(&self) -> Value {
        self.entities
            .iter()
            .map(|e| {
                let errors: Vec<Value> = e
                    .errors
                    .iter()
                    .map(|f| {
                        if f.field == "@entity" {
                            json!({"type": "entity", "message": f.message})
                        } else {
                            json!({"type": "field", "field": f.field, "message": f.message})
                        }
                    })
                    .collect();
                json!({
                    "entity_type": e.entity_type,
                    "entity_name": e.entity_name,
                    "entity_id": e.entity_id,
                    "entity_tags": e.entity_tags,
                    "entity": e.entity,
                    "errors": errors,
                })
            })
            .collect()
    }

    /// Kong's top-level `message` for a code-14 response.
    pub fn message(&self) -> String {
        format!("declarative config is invalid: {}", self.kong_fields())
    }
}

/// Walks (creating) the node for a path like `services[0].routes[1]`.
fn node_at<'a>(root: &'a mut Value, path: &str) -> &'a mut Value {
    let mut node = root;
    for part in path.split('.').filter(|p| !p.is_empty()) {
        let (key, index) = match part.split_once('[') {
            Some((k, i)) => (k, i.trim_end_matches(']').parse::<usize>().ok()),
            None => (part, None),
        };
        if !node.is_object() {
            *node = Value::Object(Map::new());
        }
        let Value::Object(map) = node else {
            unreachable!("just made an object")
        };
        node = map.entry(key.to_string()).or_insert(Value::Null);
        if let Some(i) = index {
            if !node.is_array() {
                *node = Value::Array(Vec::new());
            }
            let Value::Array(items) = node else {
                unreachable!("just made an array")
            };
            if items.len() <= i {
                items.resize(i + 1, Value::Null);
            }
            node = &mut items[i];
        }
    }
    node
}

fn set_message(node: &mut Value, field: &str, message: &str) {
    if !node.is_object() {
        *node = Value::Object(Map::new());
    }
    if let Value::Object(map) = node {
        match map.get_mut(field) {
            Some(Value::Array(list)) => list.push(message.into()),
            Some(existing) => *existing = json!([existing.clone(), message]),
            None if is_entity_key(field) => {
                map.insert(field.to_string(), json!([message]));
            }
            None => {
                map.insert(field.to_string(), message.into());
            }
        }
    }
}

/// Kong's key of an entity's cross-field errors, whose value is always a list of messages
/// (`insert_entity_error` in `kong/db/schema/init.lua`).
fn is_entity_key(field: &str) -> bool {
    field == "@entity" || field.ends_with(".@entity")
}

impl fmt::Display for ConfigErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for e in &self.document {
            writeln!(f, "  {}: {}", e.field, e.message)?;
        }
        for entity in &self.entities {
            let label = match (&entity.entity_name, &entity.entity_id) {
                (Some(name), _) => format!("{} '{name}'", entity.entity_type),
                (None, Some(id)) => format!("{} {id}", entity.entity_type),
                (None, None) => entity.entity_type.to_string(),
            };
            for e in &entity.errors {
                writeln!(f, "  {label} ({}): {}: {}", entity.path, e.field, e.message)?;
            }
        }
        Ok(())
    }
}

impl std::error::Error for ConfigErrors {}
