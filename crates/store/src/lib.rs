//! The DB-less config store: the active config in LMDB (via `heed`), so a node restarts from its last config
//! and a load is atomic — one write transaction replaces everything, and a crash leaves the old config or
//! the new one, never a mix. Readers never block the writer. The request path never reads it: requests use
//! the compiled snapshot.
//!
//! The crate is generic over entity kinds: records are JSON bytes the caller produces.
//!
//! ## Key scheme (one LMDB environment, five named databases)
//! | database   | key                                                   | value                                  |
//! |------------|-------------------------------------------------------|----------------------------------------|
//! | `entities` | `<kind> 0x00 <seq: u64 big-endian>`                   | the entity's body (JSON)               |
//! | `ids`      | `<kind> 0x00 <id>`                                    | `<seq: u64 BE>` then the entity's index keys |
//! | `unique`   | `<kind> 0x00 <field> 0x00 <value>`                    | `<id>`                                 |
//! | `foreign`  | `<to_kind> 0x00 <to_id> 0x00 <kind> 0x00 <id>`        | empty                                  |
//! | `meta`     | `hash`, `format_version`, `committed_at`, `schema_version`, `next_seq` | text             |
//!
//! `seq` is global and increasing, so ordering by it keeps the file order (routing ties depend on it).
//! The `ids` value carries the entity's `unique`/`foreign` keys (each as a tag byte `u`/`f`, a `u32` BE
//! length, the key) so a single-entity [`Store::put`] or [`Store::delete`] can drop stale index entries.
//! `schema_version` guards against a future layout change: a store with another version is refused with
//! [`StoreError::Corrupt`] rather than misread.
//!
//! ## One handle per path
//! LMDB (and heed) allow one environment per path per process: open the store once at start and share
//! the [`Store`] (it is `Clone` and `Send + Sync`).

use heed::types::Bytes;
use heed::{Database, Env};
use std::path::PathBuf;

mod batch;
mod open;
mod read;
mod resident;
mod write;

#[cfg(test)]
mod tests;

/// The layout version written to `meta`.
const SCHEMA_VERSION: &str = "1";

/// One entity to write, borrowed from the caller.
pub struct EntityRecord<'a> {
    /// The entity kind, e.g. `services`. Must not contain a NUL byte.
    pub kind: &'a str,
    /// The entity's primary key.
    pub id: &'a str,
    /// The entity as the caller serialized it (JSON).
    pub body: &'a [u8],
    /// Natural keys, e.g. `("name", "svc-a")`, for [`Store::get_by_unique`].
    pub unique: Vec<(&'a str, String)>,
    /// References as (referenced kind, referenced id), e.g. `("services", "<uuid>")`, for
    /// [`Store::referencing`].
    pub foreign: Vec<(&'a str, &'a str)>,
}

/// One change set for [`Store::apply_all`]: entities removed, then entities written, then the stored
/// hash and format version.
pub struct ChangeSet<'a> {
    pub hash: &'a str,
    pub format_version: &'a str,
    pub puts: &'a [EntityRecord<'a>],
    pub deletes: &'a [(&'a str, &'a str)],
}

/// The last committed config, as [`Store::load`] returns it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    /// The hash passed to [`Store::replace_all`]; empty after single-entity writes.
    pub hash: String,
    /// The declarative format version passed to [`Store::replace_all`].
    pub format_version: String,
    /// Unix milliseconds of the last commit.
    pub committed_at: u64,
    /// Kinds in first-seen order, each with its bodies in insertion order.
    pub entities: Vec<(String, Vec<Vec<u8>>)>,
}

/// What can go wrong. Every variant about the store's files names the path.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The directory or environment could not be opened (permissions, a file where a directory should
    /// be, a file that is not an LMDB environment).
    #[error("cannot open the config store at {path}: {detail}")]
    Open { path: PathBuf, detail: String },
    /// The write did not fit the map; the transaction was aborted and nothing changed.
    #[error("the config does not fit the store's map ({map_size} bytes); raise lmdb_map_size")]
    Full { map_size: usize },
    /// The store's content is unreadable or of another layout version.
    #[error("the config store at {path} is unreadable: {detail}")]
    Corrupt { path: PathBuf, detail: String },
    /// Any other LMDB failure.
    #[error("config store error at {path}: {detail}")]
    Lmdb { path: PathBuf, detail: String },
}

/// A handle on the store; cheap to clone (heed's `Env` is an `Arc`). Open each path once per process.
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
    /// The map's address range, to drop its pages from RSS after whole-config writes and reads.
    map_pages: Option<resident::MapPages>,
}

/// The longest key LMDB takes (`mdb_env_get_maxkeysize` of a default build); a longer one fails the
/// whole write with `MDB_BAD_VALSIZE`.
const MAX_KEY: usize = 511;

/// Joins key parts with NUL separators into `out` (cleared first), so callers can reuse one buffer.
fn key_into(out: &mut Vec<u8>, parts: &[&[u8]]) {
    out.clear();
    append_key(out, parts);
}

/// Appends the key of `parts` to `out`: the parts joined with NUL separators.
///
/// A key longer than [`MAX_KEY`] (a unique index over a 600-byte username or credential key: Kong
/// sets no length limit on them) keeps its first bytes, so prefix scans still find it, and ends with
/// a marker byte and the SHA-256 of the whole key, so two long values stay apart.
fn append_key(out: &mut Vec<u8>, parts: &[&[u8]]) {
    let start = out.len();
    for (i, p) in parts.iter().enumerate() {
        if i > 0 {
            out.push(0);
        }
        out.extend_from_slice(p);
    }
    if out.len() - start > MAX_KEY {
        use sha2::Digest;
        let digest = sha2::Sha256::digest(&out[start..]);
        out.truncate(start + MAX_KEY - 1 - digest.len());
        out.push(0xff);
        out.extend_from_slice(&digest);
    }
}

/// Joins key parts with NUL separators.
fn key(parts: &[&[u8]]) -> Vec<u8> {
    let mut k = Vec::with_capacity(parts.iter().map(|p| p.len() + 1).sum());
    key_into(&mut k, parts);
    k
}
