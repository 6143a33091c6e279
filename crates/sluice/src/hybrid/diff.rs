//! The control plane's diff of two configs: the entities a delta ships (`sluice_cluster::delta`). Entities
//! are compared typed (field for field), kind by kind, in the order of the kind table, so a one-route change
//! on a 10,000-route config costs one pass of comparisons and serializes one route.
//!
//! A DP patches its config as DB mode does (`declarative::upsert_entity` replaces an entity in place or
//! appends it, `remove_entity` keeps the order of the others). The order of a kind's list is the routing
//! tie-break and part of Kong's config hash, so a delta can only describe a new config whose surviving
//! entities keep their relative order and whose new entities come after them: otherwise [`diff`] gives
//! None and the DPs get the whole config.

use serde::Serialize;
use sluice_cluster::delta::{Change, Op};
use sluice_model::Config;
use std::collections::{HashMap, HashSet};
use uuid::Uuid;

/// Above this many changed entities a full push is sent instead (it is smaller, or close).
pub const MAX_CHANGES: usize = 1000;

/// The changes that turn `old` into `new` when patched in order, or None when patching cannot give `new`
/// exactly (an order change, another format version) or the change is large.
pub fn diff(old: &Config, new: &Config) -> Option<Vec<Change>> {
    if old.format_version != new.format_version {
        return None;
    }
    let mut out = Vec::new();
    macro_rules! each_kind {
        ([] $( $variant:ident ($ty:ident) { key: $key:ident, $($rest:tt)* } )*) => {
            $( diff_list(stringify!($key), &old.$key, &new.$key, |e: &sluice_model::$ty| e.id, &mut out)?; )*
        };
    }
    sluice_model::entity_kinds!(each_kind);
    (out.len() <= MAX_CHANGES).then_some(out)
}

/// Appends the changes of one kind's list (upserts in the new list's order, then deletes); None when the
/// surviving entities changed their order or a new one comes before one that survives.
fn diff_list<T: PartialEq + Serialize>(
    kind: &str,
    old: &[T],
    new: &[T],
    id: impl Fn(&T) -> Uuid,
    out: &mut Vec<Change>,
) -> Option<()> {
    let mut index: Option<HashMap<Uuid, usize>> = None;
    let mut last_kept: Option<usize> = None;
    let mut appended = false;
    let mut kept = 0;
    for (i, entity) in new.iter().enumerate() {
        let key = id(entity);
        // Usually an entity keeps its index; the id map is built only when one does not.
        let at = match old.get(i) {
            Some(o) if id(o) == key => Some(i),
            _ => index
                .get_or_insert_with(|| old.iter().enumerate().map(|(i, e)| (id(e), i)).collect())
                .get(&key)
                .copied(),
        };
        match at {
            Some(j) => {
                if appended || last_kept.is_some_and(|l| j <= l) {
                    return None;
                }
                last_kept = Some(j);
                kept += 1;
                if old[j] != *entity {
                    out.push(upsert(kind, key, entity)?);
                }
            }
            None => {
                appended = true;
                out.push(upsert(kind, key, entity)?);
            }
        }
    }
    if kept < old.len() {
        let alive: HashSet<Uuid> = new.iter().map(&id).collect();
        out.extend(
            old.iter()
                .map(&id)
                .filter(|k| !alive.contains(k))
                .map(|k| Change {
                    kind: kind.to_owned(),
                    id: k.to_string(),
                    op: Op::Delete,
                }),
        );
    }
    Some(())
}

/// An upsert of `entity` as the flat export has it (a certificate's SNIs are entities of their own).
fn upsert<T: Serialize>(kind: &str, id: Uuid, entity: &T) -> Option<Change> {
    let mut entity = serde_json::to_value(entity).ok()?;
    if kind == "certificates" {
        if let Some(m) = entity.as_object_mut() {
            m.remove("snis");
        }
    }
    Some(Change {
        kind: kind.to_owned(),
        id: id.to_string(),
        op: Op::Upsert { entity },
    })
}

#[cfg(test)]
mod tests;
