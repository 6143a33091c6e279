//! Committing a config to the store: the whole config in one transaction, only the entities that differ
//! from the live config (a reload of a whole config the store already holds most of), or DB mode's change
//! set. Each returns the entities' JSON the `POST /config` reply lists.

use super::LoadError;
use sluice_admin::EntityJson;
use sluice_model::declarative::kinds::Kind;
use sluice_model::declarative::Copies;
use sluice_model::{declarative, records, Config};
use sluice_store::{ChangeSet, EntityRecord, Store, StoreError};

/// One entity, owned, before it is lent to the store as an [`EntityRecord`]; only its body when it is
/// not to be written (a reply lists every entity, a reload writes only what changed).
pub(super) struct Row {
    kind: &'static str,
    write: bool,
    id: String,
    body: Vec<u8>,
    unique: Vec<(&'static str, String)>,
    foreign: Vec<(&'static str, String)>,
}

impl Row {
    pub(super) fn record(&self) -> EntityRecord<'_> {
        EntityRecord {
            kind: self.kind,
            id: &self.id,
            body: &self.body,
            unique: self.unique.clone(),
            foreign: self.foreign.iter().map(|(k, v)| (*k, v.as_str())).collect(),
        }
    }
}

/// Every entity of `config` as a row, kind by kind; those `write` picks (by kind and position in its
/// kind) with their keys.
fn rows(config: &Config, mut write: impl FnMut(&'static str, usize) -> bool) -> Vec<Row> {
    let mut rows: Vec<Row> = Vec::with_capacity(config.counts().iter().map(|(_, n)| n).sum());
    let mut position = 0;
    records::for_each_record(config, |r| {
        position = match rows.last() {
            Some(last) if last.kind == r.kind => position + 1,
            _ => 0,
        };
        let mut row = Row {
            kind: r.kind,
            write: write(r.kind, position),
            id: String::new(),
            body: r.body,
            unique: Vec::new(),
            foreign: Vec::new(),
        };
        if row.write {
            row.id = r.id.to_string();
            let unique = r.unique.into_iter().map(|(f, v)| (f, v.to_string()));
            row.unique = unique.collect();
            let foreign = r.foreign.into_iter().map(|(f, id)| (f, id.to_string()));
            row.foreign = foreign.collect();
        }
        rows.push(row);
    });
    rows
}

/// The rows' bodies grouped by kind, in order (rows come kind by kind).
fn by_kind(rows: Vec<Row>) -> EntityJson {
    let mut out: EntityJson = Vec::new();
    for row in rows {
        match out.last_mut() {
            Some((kind, bodies)) if *kind == row.kind => bodies.push(row.body),
            _ => out.push((row.kind, vec![row.body])),
        }
    }
    out
}

/// Writes the whole config to the store in one transaction, as the flat declarative export. Returns the
/// entities' JSON it wrote: the same bytes the Admin API would serialize.
pub(super) fn commit(store: &Store, config: &Config, hash: &str) -> Result<EntityJson, LoadError> {
    let rows = rows(config, |_, _| true);
    let records: Vec<EntityRecord<'_>> = rows.iter().map(Row::record).collect();
    let committed = store
        .replace_all(hash, &config.format_version, &records)
        .map_err(|e| store_error(store, e));
    drop(records);
    committed.map(|()| by_kind(rows))
}

/// [`commit`] for a store that holds `live`: writes only the entities that differ from it, in one
/// transaction, when the store can keep `config`'s order that way (see [`records::changes`]; `copies`
/// are `config`'s entities known to equal `live`'s); the
/// whole config otherwise. Returns the JSON of every entity, as [`commit`] does.
pub(super) fn commit_over(
    store: &Store,
    config: &Config,
    live: &Config,
    copies: &Copies,
    hash: &str,
) -> Result<EntityJson, LoadError> {
    let Some(changes) = records::changes(config, live, copies) else {
        return commit(store, config, hash);
    };
    let puts: std::collections::HashSet<(&str, usize)> = changes.puts.iter().copied().collect();
    let rows = rows(config, |kind, i| puts.contains(&(kind, i)));
    let records: Vec<EntityRecord<'_>> = rows.iter().filter(|r| r.write).map(Row::record).collect();
    let deletes: Vec<(&str, String)> = changes
        .deletes
        .iter()
        .map(|(kind, id)| (*kind, id.to_string()))
        .collect();
    let deletes: Vec<(&str, &str)> = deletes.iter().map(|(k, id)| (*k, id.as_str())).collect();
    let committed = store
        .apply(hash, &config.format_version, &records, &deletes)
        .map_err(|e| store_error(store, e));
    drop(records);
    committed.map(|()| by_kind(rows))
}

fn store_error(store: &Store, e: StoreError) -> LoadError {
    match e {
        StoreError::Full { .. } => LoadError::TooLarge(store_error_text(store, e)),
        other => LoadError::Store(format!("could not commit the configuration: {other}")),
    }
}

/// What a failed store write says (a full store names the setting to raise).
pub(super) fn store_error_text(store: &Store, e: StoreError) -> String {
    match e {
        StoreError::Full { .. } => format!(
            "Configuration does not fit in the LMDB store ({}); consider raising lmdb_map_size",
            store.path().display()
        ),
        other => format!("could not commit the changes: {other}"),
    }
}

/// One entity that changed in DB mode: its JSON now, or None when it was deleted.
#[derive(Clone)]
pub struct EntityChange {
    pub kind: Kind,
    pub id: uuid::Uuid,
    pub body: Option<Vec<u8>>,
}

/// Writes only `changes` to the store, in one transaction (a change set applied without a
/// [`Deferred`](super::deferred::Deferred) queue: one change does not rewrite the whole config). Returns
/// no entity JSON: nothing answers with the whole config.
pub(super) fn commit_changes(
    store: &Store,
    hash: &str,
    changes: &[EntityChange],
) -> Result<EntityJson, LoadError> {
    commit_change_sets(store, &[(hash, changes)]).map_err(LoadError::Store)?;
    Ok(Vec::new())
}

/// Writes change sets (each the config hash it led to and its entities) to the store, in order, in one
/// transaction: one set when applied at once, a batch from the [`Deferred`](super::deferred::Deferred)
/// queue.
pub(super) fn commit_change_sets(
    store: &Store,
    sets: &[(&str, &[EntityChange])],
) -> Result<(), String> {
    let owned = (sets.iter())
        .map(|(_, changes)| change_rows(changes))
        .collect::<Result<Vec<_>, String>>()?;
    let records: Vec<Vec<EntityRecord<'_>>> = (owned.iter())
        .map(|(rows, _)| rows.iter().map(Row::record).collect())
        .collect();
    let deletes: Vec<Vec<(&str, &str)>> = (owned.iter())
        .map(|(_, d)| d.iter().map(|(k, id)| (*k, id.as_str())).collect())
        .collect();
    let change_sets: Vec<ChangeSet<'_>> = (sets.iter().zip(&records).zip(&deletes))
        .map(|(((hash, _), puts), deletes)| ChangeSet {
            hash,
            format_version: "3.0",
            puts,
            deletes,
        })
        .collect();
    store
        .apply_all(&change_sets)
        .map_err(|e| store_error_text(store, e))
}

/// The rows `changes` write and the (kind, id) they delete.
type ChangeRows = (Vec<Row>, Vec<(&'static str, String)>);

/// `changes` as the store's rows to write and (kind, id) to delete.
fn change_rows(changes: &[EntityChange]) -> Result<ChangeRows, String> {
    let mut rows = Vec::new();
    let mut deletes = Vec::new();
    for c in changes {
        match &c.body {
            None => deletes.push((c.kind.key(), c.id.to_string())),
            Some(body) => {
                let one = declarative::from_store(
                    String::new(),
                    String::new(),
                    vec![(c.kind.key().to_string(), vec![body.clone()])],
                )?;
                rows.extend(self::rows(&one, |_, _| true));
            }
        }
    }
    Ok((rows, deletes))
}
