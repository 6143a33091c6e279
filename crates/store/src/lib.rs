//! The DB-less config store: the active config in LMDB (via `heed`), so a node restarts from its last config
//! and a load is atomic — one write transaction replaces everything, and a crash leaves the old config or
//! the new one, never a mix. The request path never reads it: requests use the compiled snapshot.
//!
//! The crate is generic over entity kinds: records are JSON bytes the caller produces.
//!
//! ## Key scheme (one LMDB environment, five named databases)
//! | database   | key                                   | value                         |
//! |------------|---------------------------------------|-------------------------------|
//! | `entities` | `<kind> 0x00 <seq: u64 big-endian>`   | the entity's JSON             |
//! | `ids`      | `<kind> 0x00 <id>`                    | `<seq: u64 big-endian>`       |
//! | `unique`   | `<kind> 0x00 <field> 0x00 <value>`    | `<id>`                        |
//! | `foreign`  | `<field> 0x00 <to_id> 0x00 <kind> 0x00 <id>` | empty                  |
//! | `meta`     | `hash`, `format_version`, `committed_at`, `schema_version` | text   |
//!
//! `seq` keeps the file order (routing ties depend on it). `schema_version` guards against a future layout.

use heed::types::Bytes;
use heed::{Database, Env, EnvOpenOptions, RwTxn};
use std::path::{Path, PathBuf};

#[cfg(test)]
mod tests;

/// The layout version written to `meta`.
const SCHEMA_VERSION: &str = "1";

/// One entity to write.
pub struct EntityRecord<'a> {
    pub kind: &'a str,
    pub id: &'a str,
    pub body: &'a [u8],
    /// Natural keys, e.g. `("name", "svc-a")`.
    pub unique: Vec<(&'a str, String)>,
    /// Foreign keys as (field, referenced id), e.g. `("service", "<uuid>")`.
    pub foreign: Vec<(&'a str, &'a str)>,
}

/// The last committed config.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    pub hash: String,
    pub format_version: String,
    /// Unix milliseconds of the commit.
    pub committed_at: u64,
    /// Kinds in first-seen order, each with its bodies in insertion order.
    pub entities: Vec<(String, Vec<Vec<u8>>)>,
}

/// What can go wrong.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot open the config store at {path}: {detail}")]
    Open { path: PathBuf, detail: String },
    #[error("the config does not fit the store's map ({map_size} bytes); raise lmdb_map_size")]
    Full { map_size: usize },
    #[error("the config store at {path} is unreadable: {detail}")]
    Corrupt { path: PathBuf, detail: String },
    #[error("config store error: {0}")]
    Lmdb(String),
}

/// A handle on the store; cheap to clone. Open each path once per process (LMDB's rule).
#[derive(Clone)]
pub struct Store {
    env: Env,
    path: PathBuf,
    map_size: usize,
    entities: Database<Bytes, Bytes>,
    ids: Database<Bytes, Bytes>,
    unique: Database<Bytes, Bytes>,
    foreign: Database<Bytes, Bytes>,
    meta: Database<Bytes, Bytes>,
}

fn key(parts: &[&[u8]]) -> Vec<u8> {
    let mut k = Vec::with_capacity(parts.iter().map(|p| p.len() + 1).sum());
    for (i, p) in parts.iter().enumerate() {
        if i > 0 {
            k.push(0);
        }
        k.extend_from_slice(p);
    }
    k
}

impl Store {
    /// Opens (creating) the store in `dir`. `map_size` is rounded up to a page multiple.
    pub fn open(dir: &Path, map_size: usize) -> Result<Store, StoreError> {
        let open_err = |detail: String| StoreError::Open {
            path: dir.to_path_buf(),
            detail,
        };
        std::fs::create_dir_all(dir).map_err(|e| open_err(e.to_string()))?;
        let map_size = map_size.max(1 << 20).div_ceil(4096) * 4096;
        let mut options = EnvOpenOptions::new();
        options.map_size(map_size).max_dbs(8);
        #[allow(unsafe_code)]
        // SAFETY: heed marks opening unsafe because opening the same environment twice in one process, or
        // changing the file under a live map, is undefined behaviour. The binary opens the store exactly once
        // at start and keeps this handle for the process lifetime; nothing else writes these files.
        let env = unsafe { options.open(dir) }.map_err(|e| open_err(e.to_string()))?;
        let mut wtxn = env.write_txn().map_err(|e| open_err(e.to_string()))?;
        let mut db = |name: &str| {
            env.create_database::<Bytes, Bytes>(&mut wtxn, Some(name))
                .map_err(|e| StoreError::Corrupt {
                    path: dir.to_path_buf(),
                    detail: e.to_string(),
                })
        };
        let (entities, ids, unique, foreign, meta) = (
            db("entities")?,
            db("ids")?,
            db("unique")?,
            db("foreign")?,
            db("meta")?,
        );
        wtxn.commit().map_err(|e| open_err(e.to_string()))?;
        let store = Store {
            env,
            path: dir.to_path_buf(),
            map_size,
            entities,
            ids,
            unique,
            foreign,
            meta,
        };
        if let Some(v) = store.meta_value("schema_version")? {
            if v != SCHEMA_VERSION {
                return Err(StoreError::Corrupt {
                    path: dir.to_path_buf(),
                    detail: format!("layout version {v}, this build reads {SCHEMA_VERSION}"),
                });
            }
        }
        Ok(store)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn map_size(&self) -> usize {
        self.map_size
    }

    fn lmdb(&self, e: heed::Error) -> StoreError {
        match e {
            heed::Error::Mdb(heed::MdbError::MapFull) => StoreError::Full {
                map_size: self.map_size,
            },
            heed::Error::Mdb(
                heed::MdbError::Corrupted | heed::MdbError::Invalid | heed::MdbError::PageNotFound,
            ) => StoreError::Corrupt {
                path: self.path.clone(),
                detail: e.to_string(),
            },
            other => StoreError::Lmdb(other.to_string()),
        }
    }

    fn meta_value(&self, name: &str) -> Result<Option<String>, StoreError> {
        let rtxn = self.env.read_txn().map_err(|e| self.lmdb(e))?;
        let v = self
            .meta
            .get(&rtxn, name.as_bytes())
            .map_err(|e| self.lmdb(e))?;
        Ok(v.map(|b| String::from_utf8_lossy(b).into_owned()))
    }

    /// The hash of the committed config, if any.
    pub fn current_hash(&self) -> Result<Option<String>, StoreError> {
        self.meta_value("hash")
    }

    /// Replaces the whole config in one write transaction. On any error (e.g. [`StoreError::Full`]) the
    /// transaction is aborted and the previous config stays as it was.
    pub fn replace_all(
        &self,
        hash: &str,
        format_version: &str,
        records: &[EntityRecord<'_>],
    ) -> Result<(), StoreError> {
        let mut wtxn = self.env.write_txn().map_err(|e| self.lmdb(e))?;
        self.write_all(&mut wtxn, hash, format_version, records)
            .map_err(|e| self.lmdb(e))?;
        wtxn.commit().map_err(|e| self.lmdb(e))
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
        for (seq, r) in records.iter().enumerate() {
            self.put_at(wtxn, r, seq as u64)?;
        }
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        self.meta.put(wtxn, b"hash", hash.as_bytes())?;
        self.meta
            .put(wtxn, b"format_version", format_version.as_bytes())?;
        self.meta
            .put(wtxn, b"committed_at", now.to_string().as_bytes())?;
        self.meta
            .put(wtxn, b"schema_version", SCHEMA_VERSION.as_bytes())?;
        Ok(())
    }

    fn put_at(&self, wtxn: &mut RwTxn<'_>, r: &EntityRecord<'_>, seq: u64) -> heed::Result<()> {
        let kind = r.kind.as_bytes();
        self.entities
            .put(wtxn, &key(&[kind, &seq.to_be_bytes()]), r.body)?;
        self.ids
            .put(wtxn, &key(&[kind, r.id.as_bytes()]), &seq.to_be_bytes())?;
        for (field, value) in &r.unique {
            self.unique.put(
                wtxn,
                &key(&[kind, field.as_bytes(), value.as_bytes()]),
                r.id.as_bytes(),
            )?;
        }
        for (field, to) in &r.foreign {
            self.foreign.put(
                wtxn,
                &key(&[field.as_bytes(), to.as_bytes(), kind, r.id.as_bytes()]),
                b"",
            )?;
        }
        Ok(())
    }

    /// The committed config, or None when nothing was ever committed.
    pub fn load(&self) -> Result<Option<Snapshot>, StoreError> {
        let rtxn = self.env.read_txn().map_err(|e| self.lmdb(e))?;
        let Some(hash) = self.meta.get(&rtxn, b"hash").map_err(|e| self.lmdb(e))? else {
            return Ok(None);
        };
        let text = |k: &[u8]| -> Result<String, StoreError> {
            Ok(self
                .meta
                .get(&rtxn, k)
                .map_err(|e| self.lmdb(e))?
                .map(|b| String::from_utf8_lossy(b).into_owned())
                .unwrap_or_default())
        };
        let mut rows: Vec<(u64, String, Vec<u8>)> = Vec::new();
        for item in self.entities.iter(&rtxn).map_err(|e| self.lmdb(e))? {
            let (k, v) = item.map_err(|e| self.lmdb(e))?;
            let split = k
                .len()
                .checked_sub(9)
                .filter(|i| k[*i] == 0)
                .ok_or_else(|| StoreError::Corrupt {
                    path: self.path.clone(),
                    detail: "malformed entity key".into(),
                })?;
            let seq = u64::from_be_bytes(k[split + 1..].try_into().unwrap_or_default());
            rows.push((
                seq,
                String::from_utf8_lossy(&k[..split]).into_owned(),
                v.to_vec(),
            ));
        }
        rows.sort_by_key(|r| r.0);
        let mut entities: Vec<(String, Vec<Vec<u8>>)> = Vec::new();
        for (_, kind, body) in rows {
            match entities.iter_mut().find(|(k, _)| *k == kind) {
                Some((_, list)) => list.push(body),
                None => entities.push((kind, vec![body])),
            }
        }
        Ok(Some(Snapshot {
            hash: String::from_utf8_lossy(hash).into_owned(),
            format_version: text(b"format_version")?,
            committed_at: text(b"committed_at")?.parse().unwrap_or(0),
            entities,
        }))
    }

    /// One entity by kind and id.
    pub fn get(&self, kind: &str, id: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let rtxn = self.env.read_txn().map_err(|e| self.lmdb(e))?;
        let Some(seq) = self
            .ids
            .get(&rtxn, &key(&[kind.as_bytes(), id.as_bytes()]))
            .map_err(|e| self.lmdb(e))?
        else {
            return Ok(None);
        };
        let body = self
            .entities
            .get(&rtxn, &key(&[kind.as_bytes(), seq]))
            .map_err(|e| self.lmdb(e))?;
        Ok(body.map(<[u8]>::to_vec))
    }

    /// One entity by a natural key.
    pub fn get_by_unique(
        &self,
        kind: &str,
        field: &str,
        value: &str,
    ) -> Result<Option<Vec<u8>>, StoreError> {
        let id = {
            let rtxn = self.env.read_txn().map_err(|e| self.lmdb(e))?;
            let k = key(&[kind.as_bytes(), field.as_bytes(), value.as_bytes()]);
            self.unique
                .get(&rtxn, &k)
                .map_err(|e| self.lmdb(e))?
                .map(|b| String::from_utf8_lossy(b).into_owned())
        };
        match id {
            Some(id) => self.get(kind, &id),
            None => Ok(None),
        }
    }

    /// Ids of `kind` entities whose `field` references `to_id`.
    pub fn referencing(
        &self,
        field: &str,
        to_id: &str,
        kind: &str,
    ) -> Result<Vec<String>, StoreError> {
        let rtxn = self.env.read_txn().map_err(|e| self.lmdb(e))?;
        let mut prefix = key(&[field.as_bytes(), to_id.as_bytes(), kind.as_bytes()]);
        prefix.push(0);
        let mut out = Vec::new();
        for item in self
            .foreign
            .prefix_iter(&rtxn, &prefix)
            .map_err(|e| self.lmdb(e))?
        {
            let (k, _) = item.map_err(|e| self.lmdb(e))?;
            out.push(String::from_utf8_lossy(&k[prefix.len()..]).into_owned());
        }
        Ok(out)
    }
}
