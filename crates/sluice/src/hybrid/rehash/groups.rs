//! The five hashed groups of a config (routes, services, plugins, upstreams, targets) kept as each
//! entity's serialized bytes (`sluice_cluster::hash::Serialized`), so that the group hash of the next
//! config serializes only the entities a delta names and feeds the others' kept bytes to MD5
//! (`sluice_cluster::hash::Marked`, which folds at Kong's points and resumes from the MD5 state kept
//! before the first entity that changed). Made for every config a CP pushes and a DP runs with deltas.
//!
//! Each group also sums its entities' digests (`sluice_cluster::digest`): a DP that checks a CP's digest
//! builds its groups without Kong's hash (`marks: false`), so a check feeds no MD5.

use rustc_hash::{FxHashMap, FxHashSet};
use serde::Serialize;
use sluice_cluster::digest::GroupSum;
use sluice_cluster::hash::{Marked, Serialized, EMPTY_CONFIG_HASH};
use sluice_model::Config;
use std::sync::Arc;
use uuid::Uuid;

/// One group's entities in the config's order: their ids and kept bytes (shared with the configs
/// before and after, for the entities they have in common).
#[derive(Default)]
pub struct Kept {
    ids: Vec<Uuid>,
    items: Vec<Arc<Serialized>>,
    /// The group's array hash, with the states the next config's resumes from (None: not made, the
    /// group was built for its digest only).
    marked: Option<Marked>,
    /// The sum of the entities' digests.
    sum: GroupSum,
}

impl Kept {
    /// Kong's hash of the group: zeros when it has no entities (the export then has no entry for it).
    /// A group built for its digest alone hashes all of its entities here (not on any hot path: a DP
    /// that checks digests never asks).
    pub fn hash(&self) -> String {
        if self.items.is_empty() {
            return EMPTY_CONFIG_HASH.to_owned();
        }
        match &self.marked {
            Some(marked) => marked.hash().to_owned(),
            None => Marked::of(self.items.iter().map(|i| &**i), None)
                .hash()
                .to_owned(),
        }
    }

    /// Sluice's digest of the group.
    pub fn sum(&self) -> GroupSum {
        self.sum
    }

    /// The heap memory the kept bytes take (the ids and pointers included).
    pub fn heap_size(&self) -> usize {
        let per_entity = std::mem::size_of::<Uuid>() + std::mem::size_of::<Arc<Serialized>>();
        let arc_header = 2 * std::mem::size_of::<usize>();
        let each: usize = self
            .items
            .iter()
            .map(|i| i.heap_size() + std::mem::size_of::<Serialized>() + arc_header)
            .sum();
        let marks = self.marked.as_ref().map_or(0, Marked::heap_size);
        each + self.items.len() * per_entity + marks
    }
}

/// The kept groups of `config`, in `sluice_cluster::hash::GROUPS` order. With `before` (the groups of
/// the config before) group `i` is rebuilt only when `rebuild(i)`, reusing the bytes of every entity
/// whose id is not in `changed[i]`; otherwise it is shared as it was. With `marks` false a rebuilt group
/// gets its digest but not Kong's hash.
pub fn of(
    config: &Config,
    before: Option<&[Arc<Kept>; 5]>,
    rebuild: impl Fn(usize) -> bool,
    changed: &[FxHashSet<Uuid>; 5],
    marks: bool,
) -> [Arc<Kept>; 5] {
    let group = |i: usize| match before {
        Some(before) if !rebuild(i) => Err(before[i].clone()),
        before => Ok(Rebuild {
            before: before.map(|b| &*b[i]),
            changed: &changed[i],
            marks,
        }),
    };
    [
        list(&config.routes, |e| e.id, group(0)),
        list(&config.services, |e| e.id, group(1)),
        list(&config.plugins, |e| e.id, group(2)),
        list(&config.upstreams, |e| e.id, group(3)),
        list(&config.targets, |e| e.id, group(4)),
    ]
}

/// How a group is rebuilt: from the group before (if any), with the ids that changed, and with Kong's
/// hash made or not.
struct Rebuild<'a> {
    before: Option<&'a Kept>,
    changed: &'a FxHashSet<Uuid>,
    marks: bool,
}

/// The kept form of one group's list: Err is the unchanged group.
fn list<T: Serialize>(
    entities: &[T],
    id: impl Fn(&T) -> Uuid,
    group: Result<Rebuild<'_>, Arc<Kept>>,
) -> Arc<Kept> {
    let Rebuild {
        before,
        changed,
        marks,
    } = match group {
        Err(unchanged) => return unchanged,
        Ok(group) => group,
    };
    let empty = Kept::default();
    let before = before.unwrap_or(&empty);
    // Usually an entity keeps its index; the id map is built only when one does not (a delete).
    let mut index: Option<FxHashMap<Uuid, usize>> = None;
    let mut kept = Kept {
        ids: Vec::with_capacity(entities.len()),
        items: Vec::with_capacity(entities.len()),
        marked: None,
        sum: GroupSum::default(),
    };
    // The leading entities that are the group before's at the same index: the hash resumes after them.
    let mut same = 0;
    for (i, entity) in entities.iter().enumerate() {
        let key = id(entity);
        let reused = if changed.contains(&key) {
            None
        } else {
            match before.ids.get(i) {
                Some(b) if *b == key => Some(i),
                _ => index
                    .get_or_insert_with(|| {
                        before
                            .ids
                            .iter()
                            .enumerate()
                            .map(|(i, k)| (*k, i))
                            .collect()
                    })
                    .get(&key)
                    .copied(),
            }
        };
        if same == i && reused == Some(i) {
            same = i + 1;
        }
        let item = match reused {
            Some(j) => before.items[j].clone(),
            // As the export has it (`declarative::for_each_entity_of`).
            None => Arc::new(Serialized::of(
                &serde_json::to_value(entity).unwrap_or(serde_json::Value::Null),
            )),
        };
        kept.sum.add(item.digest());
        kept.ids.push(key);
        kept.items.push(item);
    }
    if marks {
        let items = kept.items.iter().map(|i| &**i);
        let previous = before.marked.as_ref().map(|m| (m, same));
        kept.marked = Some(Marked::of(items, previous));
    }
    Arc::new(kept)
}
