//! The five hashed groups of a config (routes, services, plugins, upstreams, targets) kept as each
//! entity's serialized bytes (`sluice_cluster::hash::Serialized`), so that the group hash of the next
//! config serializes only the entities a delta names and feeds the others' kept bytes to MD5
//! (`sluice_cluster::hash::Marked`, which folds at Kong's points and resumes from the MD5 state kept
//! before the first entity that changed). Made for every config a CP pushes and a DP runs with deltas.

use serde::Serialize;
use sluice_cluster::hash::{Marked, Serialized, EMPTY_CONFIG_HASH};
use sluice_model::Config;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use uuid::Uuid;

/// One group's entities in the config's order: their ids and kept bytes (shared with the configs
/// before and after, for the entities they have in common).
#[derive(Default)]
pub struct Kept {
    ids: Vec<Uuid>,
    items: Vec<Arc<Serialized>>,
    /// The group's array hash, with the states the next config's resumes from.
    marked: Marked,
}

impl Kept {
    /// Kong's hash of the group: zeros when it has no entities (the export then has no entry for it).
    pub fn hash(&self) -> String {
        if self.items.is_empty() {
            return EMPTY_CONFIG_HASH.to_owned();
        }
        self.marked.hash().to_owned()
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
        each + self.items.len() * per_entity + self.marked.heap_size()
    }
}

/// The kept groups of `config`, in `sluice_cluster::hash::GROUPS` order. With `before` (the groups of
/// the config before) group `i` is rebuilt only when `rebuild(i)`, reusing the bytes of every entity
/// whose id is not in `changed[i]`; otherwise it is shared as it was.
pub fn of(
    config: &Config,
    before: Option<&[Arc<Kept>; 5]>,
    rebuild: impl Fn(usize) -> bool,
    changed: &[HashSet<Uuid>; 5],
) -> [Arc<Kept>; 5] {
    let group = |i: usize| match before {
        Some(before) if !rebuild(i) => Err(before[i].clone()),
        before => Ok((before.map(|b| &*b[i]), &changed[i])),
    };
    [
        list(&config.routes, |e| e.id, group(0)),
        list(&config.services, |e| e.id, group(1)),
        list(&config.plugins, |e| e.id, group(2)),
        list(&config.upstreams, |e| e.id, group(3)),
        list(&config.targets, |e| e.id, group(4)),
    ]
}

/// The kept form of one group's list: Err is the unchanged group; Ok the group before (if any) and the
/// ids that changed.
fn list<T: Serialize>(
    entities: &[T],
    id: impl Fn(&T) -> Uuid,
    group: Result<(Option<&Kept>, &HashSet<Uuid>), Arc<Kept>>,
) -> Arc<Kept> {
    let (before, changed) = match group {
        Err(unchanged) => return unchanged,
        Ok(group) => group,
    };
    let empty = Kept::default();
    let before = before.unwrap_or(&empty);
    // Usually an entity keeps its index; the id map is built only when one does not (a delete).
    let mut index: Option<HashMap<Uuid, usize>> = None;
    let mut kept = Kept {
        ids: Vec::with_capacity(entities.len()),
        items: Vec::with_capacity(entities.len()),
        marked: Marked::default(),
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
        kept.ids.push(key);
        kept.items.push(item);
    }
    let items = kept.items.iter().map(|i| &**i);
    kept.marked = Marked::of(items, Some((&before.marked, same)));
    Arc::new(kept)
}
