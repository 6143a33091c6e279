//! Kong's unique constraints across the entities of one config: natural keys per kind, given ids per kind,
//! a plugin's scope, a target per upstream. Each entity claims its keys in input order; a key claimed
//! before is an error on the later entity. Keys are kept as keyed 128-bit hashes of (kind, field, value),
//! so an entity reused from the previous load claims the keys its validation gave then without keeping
//! their text (see [`super::super::reuse`]).

use super::super::reuse::{KeyHashes, Reusable, UniqueKey};
use super::{reported, Entity, FieldError, Kind};
use serde_json::Value;

/// Natural keys seen so far (their hashes).
pub(super) type Seen = rustc_hash::FxHashSet<u128>;

/// The natural keys of an entity of `kind` from its normalized form (or, invalid, its reported form),
/// besides its id.
pub(super) fn keys(kind: Kind, v: &Value) -> Vec<UniqueKey> {
    let s = |f: &str| v.get(f).and_then(|x| x.as_str()).map(String::from);
    let mut keys: Vec<UniqueKey> = Vec::new();
    let mut plain = |field: &'static str| keys.extend(s(field).map(|n| (field, n, None)));
    match kind {
        Kind::Service | Kind::Route | Kind::Upstream | Kind::Sni => plain("name"),
        Kind::Consumer => {
            plain("username");
            plain("custom_id");
        }
        Kind::KeyAuth | Kind::Jwt => plain("key"),
        Kind::BasicAuth | Kind::HmacAuth => plain("username"),
        Kind::OAuth2 => plain("client_id"),
        Kind::Target => keys.push((
            "target",
            format!("{}|{}", v["upstream"], v["target"]),
            Some(v["target"].as_str().unwrap_or_default().to_string()),
        )),
        Kind::Plugin => keys.push((
            "name",
            plugin_scope(v),
            Some(v["name"].as_str().unwrap_or_default().to_string()),
        )),
        _ => {}
    }
    keys
}

/// The hash of the entity's given id as a unique key, when it was given one (generated ids derive from
/// the natural key, so only given ids can clash on their own).
fn id_hash(e: &Entity, hasher: &Reusable) -> Option<u128> {
    let given = e.raw.value.get("id").is_some_and(Value::is_string);
    given.then(|| hasher.unique_hash(e.raw.kind, "id", e.id.as_bytes()))
}

/// Checks the entity's keys against those seen before and claims them: its given id, then `own` (its
/// [`keys`]; computed here from what it has when None).
pub(super) fn claim(e: &mut Entity, own: Option<&[UniqueKey]>, seen: &mut Seen, hasher: &Reusable) {
    let computed;
    let own = match own {
        Some(own) => own,
        None => {
            // Invalid entities still take part with their raw values, so a clash is reported even then.
            computed = if e.normalized.is_null() {
                keys(e.raw.kind, &Value::Object(reported(e)))
            } else {
                keys(e.raw.kind, &e.normalized)
            };
            &computed
        }
    };
    let kind = e.raw.kind;
    if let Some(id) = id_hash(e, hasher) {
        if !seen.insert(id) {
            e.errors.push(taken(kind, "id", &e.id.to_string()));
        }
    }
    for (field, value, shown) in own {
        if !seen.insert(hasher.unique_hash(kind, field, value.as_bytes())) {
            e.errors
                .push(taken(kind, field, shown.as_ref().unwrap_or(value)));
        }
    }
}

/// Claims the keys of an entity reused from the previous load (`own`, as [`hashes`] gave them then),
/// all or none: false when one is taken, and the entity must then go the full way (which reports it).
pub(super) fn claim_copy(e: &Entity, own: &KeyHashes, seen: &mut Seen, hasher: &Reusable) -> bool {
    let id = id_hash(e, hasher);
    let all = || id.iter().chain(own.as_slice());
    if all().any(|h| seen.contains(h)) {
        return false;
    }
    seen.extend(all());
    true
}

/// The hashes of `keys` (None when there are more than a reused entity keeps).
pub(super) fn hashes(kind: Kind, keys: &[UniqueKey], hasher: &Reusable) -> Option<KeyHashes> {
    let hashes = keys
        .iter()
        .map(|(field, value, _)| hasher.unique_hash(kind, field, value.as_bytes()));
    KeyHashes::new(hashes)
}

fn taken(kind: Kind, field: &str, shown: &str) -> FieldError {
    FieldError::entity(format!(
        "uniqueness violation: '{}' entity with {field} set to '{shown}' already declared",
        kind.key()
    ))
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
