//! References between entities: the per-kind index of ids and names, and turning nesting and references
//! by name or id into `{"id": ...}` foreign keys kept beside each raw entity (see [`Entity::refs`]).

use super::{Entity, FieldError, Kind};
use rustc_hash::FxHashMap as HashMap;
use serde_json::Value;
use uuid::Uuid;

/// Lookup of entities by id and by name fields, one map per kind (looked up by `&str`, no copy).
/// Keys come from the operator's own config, so the fast non-keyed hasher is used here and for the
/// uniqueness checks.
pub(super) struct NameIndex {
    by_kind: Vec<HashMap<String, Uuid>>,
}

impl NameIndex {
    pub(super) fn new(entities: &[Entity]) -> Self {
        let mut by_kind: Vec<HashMap<String, Uuid>> =
            vec![HashMap::default(); crate::declarative::kinds::ALL.len()];
        for e in entities {
            let map = &mut by_kind[e.raw.kind as usize];
            map.entry(e.id.to_string()).or_insert(e.id);
            for field in e.raw.kind.name_fields() {
                if let Some(s) = e.raw.value.get(*field).and_then(|v| v.as_str()) {
                    map.entry(s.to_string()).or_insert(e.id);
                }
            }
        }
        NameIndex { by_kind }
    }

    fn find(&self, kind: Kind, key: &str) -> Option<Uuid> {
        self.by_kind[kind as usize].get(key).copied()
    }
}

/// Sets `field` in `refs`, in place when it is already there (as inserting into a map would).
fn set_ref(refs: &mut Vec<(&'static str, Uuid)>, field: &'static str, id: Uuid) {
    match refs.iter_mut().find(|(f, _)| *f == field) {
        Some(slot) => slot.1 = id,
        None => refs.push((field, id)),
    }
}

/// Turns nesting and references by name or id into foreign keys (in [`Entity::refs`]).
pub(super) fn resolve_refs(entities: &mut [Entity], i: usize, index: &NameIndex) {
    let mut refs = Vec::new();
    if let Some((field, parent)) = entities[i].raw.parent {
        set_ref(&mut refs, field, entities[parent].id);
    }
    let e = &entities[i];
    let mut errors = Vec::new();
    for fk in e.raw.kind.references() {
        let (field, target) = (&fk.field, &fk.parent);
        // Under a parent, the parent is the reference; a value the entity gives itself for the same
        // field must still name an entity that exists, as Kong checks it (Kong #7696), though the
        // parent wins.
        let nested = refs.iter().any(|(f, _)| f == field);
        let Some(given) = e.raw.value.get(*field) else {
            continue;
        };
        let key = match given {
            Value::Null => continue,
            Value::String(s) => Some(s.as_str()),
            Value::Object(m) => m
                .get("id")
                .or_else(|| m.get("name"))
                .or_else(|| m.get("username"))
                .and_then(|v| v.as_str()),
            _ => None,
        };
        let Some(key) = key else {
            errors.push(FieldError::new(
                *field,
                "expected a name, an id, or {id = ...}",
            ));
            continue;
        };
        match index.find(*target, key) {
            Some(_) if nested => {}
            Some(id) => set_ref(&mut refs, field, id),
            None => errors.push(FieldError::new(
                *field,
                format!("could not find {} '{key}'", target.singular()),
            )),
        }
    }
    let e = &mut entities[i];
    e.refs = refs;
    e.errors.extend(errors);
}
