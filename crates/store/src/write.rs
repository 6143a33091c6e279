//! Writes: the whole-config replace (one transaction), change sets (one transaction for one or many),
//! and single-entity put/delete.

use crate::batch::Batch;
use crate::{key_into, ChangeSet, EntityRecord, Store, StoreError, SCHEMA_VERSION};
use heed::{PutFlags, RwTxn};

/// Tag of a `unique` index key inside an `ids` value.
const TAG_UNIQUE: u8 = b'u';
/// Tag of a `foreign` index key inside an `ids` value.
const TAG_FOREIGN: u8 = b'f';

/// Reusable buffers so a bulk write does not allocate per record.
#[derive(Default)]
struct Scratch {
    key: Vec<u8>,
    ids_value: Vec<u8>,
}

/// Unix milliseconds now (0 if the clock is before 1970).
fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// An entity's index keys as kept in its `ids` value: (tag, key in `unique` or `foreign`).
pub(crate) type IndexKeys<'v> = Vec<(u8, &'v [u8])>;

/// Splits an `ids` value into its seq and its (tag, index key) entries; None when malformed.
pub(crate) fn decode_ids_value(v: &[u8]) -> Option<(u64, IndexKeys<'_>)> {
    let (seq, mut rest) = v.split_first_chunk::<8>()?;
    let mut keys = Vec::new();
    while let Some((&tag, after)) = rest.split_first() {
        let (len, after) = after.split_first_chunk::<4>()?;
        let len = usize::try_from(u32::from_be_bytes(*len)).ok()?;
        if after.len() < len {
            return None;
        }
        keys.push((tag, &after[..len]));
        rest = &after[len..];
    }
    Some((u64::from_be_bytes(*seq), keys))
}

/// Appends one tagged index key to an `ids` value.
fn push_index(out: &mut Vec<u8>, tag: u8, key: &[u8]) {
    out.push(tag);
    out.extend_from_slice(&u32::try_from(key.len()).unwrap_or(u32::MAX).to_be_bytes());
    out.extend_from_slice(key);
}

impl Store {
    /// Replaces the whole config in one write transaction: everything is cleared, then `records` (in
    /// order), their indexes and the meta are written. On any error (e.g. [`StoreError::Full`]) the
    /// transaction is aborted and the previous config stays as it was. Durable once this returns.
    pub fn replace_all(
        &self,
        hash: &str,
        format_version: &str,
        records: &[EntityRecord<'_>],
    ) -> Result<(), StoreError> {
        let mut wtxn = self.env.write_txn().map_err(|e| self.lmdb(e))?;
        self.write_all(&mut wtxn, hash, format_version, records)
            .map_err(|e| self.lmdb(e))?;
        let committed = wtxn.commit().map_err(|e| self.lmdb(e));
        self.release_map_pages();
        committed
    }

    /// Inserts or replaces one entity (keeping its position when it exists, appending otherwise) and
    /// its indexes. The stored hash becomes empty: the content no longer matches any declarative file.
    pub fn put(&self, rec: &EntityRecord<'_>) -> Result<(), StoreError> {
        let mut wtxn = self.env.write_txn().map_err(|e| self.lmdb(e))?;
        let seq = match self.remove_entity(&mut wtxn, rec.kind, rec.id)? {
            Some(seq) => seq,
            None => self.take_next_seq(&mut wtxn)?,
        };
        self.put_at(&mut wtxn, rec, seq, &mut Scratch::default())
            .and_then(|()| self.touch_meta(&mut wtxn))
            .map_err(|e| self.lmdb(e))?;
        wtxn.commit().map_err(|e| self.lmdb(e))
    }

    /// Deletes one entity and its indexes; returns whether it existed. The stored hash becomes empty.
    pub fn delete(&self, kind: &str, id: &str) -> Result<bool, StoreError> {
        let mut wtxn = self.env.write_txn().map_err(|e| self.lmdb(e))?;
        let existed = self.remove_entity(&mut wtxn, kind, id)?.is_some();
        if existed {
            self.touch_meta(&mut wtxn).map_err(|e| self.lmdb(e))?;
        }
        wtxn.commit().map_err(|e| self.lmdb(e))?;
        Ok(existed)
    }

    /// Applies a change set in one transaction: `deletes` (kind, id) are removed, `puts` inserted or
    /// replaced in place (an entity keeps its position, a new one is appended), and the stored hash and
    /// format version become `hash` and `format_version`. A reload of a whole config writes only what
    /// differs from the stored one this way.
    pub fn apply(
        &self,
        hash: &str,
        format_version: &str,
        puts: &[EntityRecord<'_>],
        deletes: &[(&str, &str)],
    ) -> Result<(), StoreError> {
        self.apply_all(&[ChangeSet {
            hash,
            format_version,
            puts,
            deletes,
        }])
    }

    /// Applies change sets one after the other, as [`Store::apply`] would each, in one transaction:
    /// one commit (and its syncs) for a whole batch. DB mode writes the changes of the last ~500 ms this
    /// way. On any error nothing is written.
    pub fn apply_all(&self, sets: &[ChangeSet<'_>]) -> Result<(), StoreError> {
        let mut wtxn = self.env.write_txn().map_err(|e| self.lmdb(e))?;
        let mut scratch = Scratch::default();
        for set in sets {
            self.apply_in(&mut wtxn, set, &mut scratch)?;
        }
        wtxn.commit().map_err(|e| self.lmdb(e))
    }

    fn apply_in(
        &self,
        wtxn: &mut RwTxn<'_>,
        set: &ChangeSet<'_>,
        scratch: &mut Scratch,
    ) -> Result<(), StoreError> {
        for (kind, id) in set.deletes {
            self.remove_entity(wtxn, kind, id)?;
        }
        for rec in set.puts {
            let seq = match self.remove_entity(wtxn, rec.kind, rec.id)? {
                Some(seq) => seq,
                None => self.take_next_seq(wtxn)?,
            };
            self.put_at(wtxn, rec, seq, scratch)
                .map_err(|e| self.lmdb(e))?;
        }
        self.touch_meta(wtxn)
            .and_then(|()| self.meta.put(wtxn, b"hash", set.hash.as_bytes()))
            .and_then(|()| {
                self.meta
                    .put(wtxn, b"format_version", set.format_version.as_bytes())
            })
            .map_err(|e| self.lmdb(e))
    }

    fn write_all(
        &self,
        wtxn: &mut RwTxn<'_>,
        hash: &str,
        format_version: &str,
        records: &[EntityRecord<'_>],
    ) -> heed::Result<()> {
        for db in [
            &self.entities,
            &self.ids,
            &self.unique,
            &self.foreign,
            &self.meta,
        ] {
            db.clear(wtxn)?;
        }
        self.write_sorted(wtxn, records)?;
        let next_seq = records.len().to_string();
        self.meta.put(wtxn, b"next_seq", next_seq.as_bytes())?;
        self.meta.put(wtxn, b"hash", hash.as_bytes())?;
        self.meta
            .put(wtxn, b"format_version", format_version.as_bytes())?;
        self.meta
            .put(wtxn, b"committed_at", now_ms().to_string().as_bytes())?;
        self.meta
            .put(wtxn, b"schema_version", SCHEMA_VERSION.as_bytes())
    }

    /// Writes `records` (seq = position) and their indexes into the emptied databases, each database's
    /// entries sorted and appended (see [`Batch`]).
    fn write_sorted(&self, wtxn: &mut RwTxn<'_>, records: &[EntityRecord<'_>]) -> heed::Result<()> {
        // `kind 0x00 seq`: sorting by kind keeps each kind's seqs increasing (a stable sort).
        let mut order: Vec<usize> = (0..records.len()).collect();
        order.sort_by_key(|&i| records[i].kind.as_bytes());
        let mut key = Vec::new();
        for i in order {
            let r = &records[i];
            key_into(&mut key, &[r.kind.as_bytes(), &(i as u64).to_be_bytes()]);
            self.entities
                .put_with_flags(wtxn, PutFlags::APPEND, &key, r.body)?;
        }
        let mut ids = Batch::with_capacity(records.len(), 160);
        let mut unique = Batch::with_capacity(records.len(), 80);
        let mut foreign = Batch::with_capacity(records.len(), 100);
        let mut ids_value = Vec::new();
        for (seq, r) in (0u64..).zip(records) {
            let (kind, id) = (r.kind.as_bytes(), r.id.as_bytes());
            ids_value.clear();
            ids_value.extend_from_slice(&seq.to_be_bytes());
            for (field, value) in &r.unique {
                unique.push(&[kind, field.as_bytes(), value.as_bytes()], id);
                push_index(&mut ids_value, TAG_UNIQUE, unique.last_key());
            }
            for (to_kind, to_id) in &r.foreign {
                foreign.push(&[to_kind.as_bytes(), to_id.as_bytes(), kind, id], b"");
                push_index(&mut ids_value, TAG_FOREIGN, foreign.last_key());
            }
            ids.push(&[kind, id], &ids_value);
        }
        ids.write(wtxn, &self.ids)?;
        unique.write(wtxn, &self.unique)?;
        foreign.write(wtxn, &self.foreign)
    }

    /// Writes one entity at `seq` with its indexes (no removal of previous entries).
    fn put_at(
        &self,
        wtxn: &mut RwTxn<'_>,
        r: &EntityRecord<'_>,
        seq: u64,
        s: &mut Scratch,
    ) -> heed::Result<()> {
        let kind = r.kind.as_bytes();
        let id = r.id.as_bytes();
        let seq_bytes = seq.to_be_bytes();
        key_into(&mut s.key, &[kind, &seq_bytes]);
        self.entities.put(wtxn, &s.key, r.body)?;
        s.ids_value.clear();
        s.ids_value.extend_from_slice(&seq_bytes);
        for (field, value) in &r.unique {
            key_into(&mut s.key, &[kind, field.as_bytes(), value.as_bytes()]);
            self.unique.put(wtxn, &s.key, id)?;
            push_index(&mut s.ids_value, TAG_UNIQUE, &s.key);
        }
        for (to_kind, to_id) in &r.foreign {
            key_into(
                &mut s.key,
                &[to_kind.as_bytes(), to_id.as_bytes(), kind, id],
            );
            self.foreign.put(wtxn, &s.key, b"")?;
            push_index(&mut s.ids_value, TAG_FOREIGN, &s.key);
        }
        key_into(&mut s.key, &[kind, id]);
        self.ids.put(wtxn, &s.key, &s.ids_value)
    }

    /// Removes an entity's body, id entry and index entries; returns its seq when it existed.
    fn remove_entity(
        &self,
        wtxn: &mut RwTxn<'_>,
        kind: &str,
        id: &str,
    ) -> Result<Option<u64>, StoreError> {
        let id_key = crate::key(&[kind.as_bytes(), id.as_bytes()]);
        let Some(value) = self
            .ids
            .get(wtxn, &id_key)
            .map_err(|e| self.lmdb(e))?
            .map(<[u8]>::to_vec)
        else {
            return Ok(None);
        };
        let (seq, keys) =
            decode_ids_value(&value).ok_or_else(|| self.corrupt("malformed id entry"))?;
        let del = |wtxn: &mut RwTxn<'_>| -> heed::Result<()> {
            for (tag, k) in keys {
                let db = if tag == TAG_UNIQUE {
                    &self.unique
                } else {
                    &self.foreign
                };
                db.delete(wtxn, k)?;
            }
            let entity_key = crate::key(&[kind.as_bytes(), &seq.to_be_bytes()]);
            self.entities.delete(wtxn, &entity_key)?;
            self.ids.delete(wtxn, &id_key)?;
            Ok(())
        };
        del(wtxn).map_err(|e| self.lmdb(e))?;
        Ok(Some(seq))
    }

    /// Reserves the next insertion seq.
    fn take_next_seq(&self, wtxn: &mut RwTxn<'_>) -> Result<u64, StoreError> {
        let seq = match self.meta.get(wtxn, b"next_seq").map_err(|e| self.lmdb(e))? {
            Some(b) => std::str::from_utf8(b)
                .ok()
                .and_then(|t| t.parse::<u64>().ok())
                .ok_or_else(|| self.corrupt("malformed next_seq"))?,
            None => 0,
        };
        let next = seq.saturating_add(1).to_string();
        self.meta
            .put(wtxn, b"next_seq", next.as_bytes())
            .map_err(|e| self.lmdb(e))?;
        Ok(seq)
    }

    /// Marks the config as changed by a single-entity write: no file hash, a new commit time.
    fn touch_meta(&self, wtxn: &mut RwTxn<'_>) -> heed::Result<()> {
        self.meta.put(wtxn, b"hash", b"")?;
        self.meta
            .put(wtxn, b"committed_at", now_ms().to_string().as_bytes())?;
        self.meta
            .put(wtxn, b"schema_version", SCHEMA_VERSION.as_bytes())?;
        if self.meta.get(wtxn, b"format_version")?.is_none() {
            self.meta.put(wtxn, b"format_version", b"")?;
        }
        Ok(())
    }
}
