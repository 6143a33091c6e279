//! Opening the environment, error mapping, and size accounting.

use crate::{Store, StoreError, SCHEMA_VERSION};
use heed::types::Bytes;
use heed::{EnvFlags, EnvOpenOptions};
use std::path::Path;

/// LMDB needs the map to be a multiple of the OS page size; 64 KiB is a multiple of every common one.
const MAP_GRANULE: usize = 64 * 1024;
/// Below this LMDB cannot even hold its metadata pages and five databases.
const MIN_MAP: usize = 256 * 1024;

impl Store {
    /// Opens (creating `dir` if needed) the store. `map_size_bytes` is the most the store may ever hold;
    /// it is rounded up to a page multiple. Call once per path per process and share the handle.
    pub fn open(dir: &Path, map_size_bytes: usize) -> Result<Store, StoreError> {
        let open_err = |detail: String| StoreError::Open {
            path: dir.to_path_buf(),
            detail,
        };
        std::fs::create_dir_all(dir).map_err(|e| open_err(e.to_string()))?;
        let map_size = map_size_bytes.max(MIN_MAP).div_ceil(MAP_GRANULE) * MAP_GRANULE;
        let mut options = EnvOpenOptions::new();
        options.map_size(map_size).max_dbs(8);
        #[allow(unsafe_code)]
        // SAFETY: heed marks opening unsafe because opening the same environment twice in one process, or
        // changing the file under a live map, is undefined behaviour. The binary opens the store exactly once
        // at start and keeps this handle for the process lifetime; nothing else writes these files.
        // `WRITE_MAP` is marked unsafe because a wild write into the map would corrupt the store; only
        // LMDB writes there (this crate hands out copies or read-only slices, never the map).
        let env = unsafe {
            // Writers put pages straight into the map instead of LMDB's own malloc'd copies, which LMDB
            // keeps for reuse until the environment closes: with the 10k-route config that was 54 MB of
            // C heap held for the life of the process after the first `POST /config`.
            options.flags(EnvFlags::WRITE_MAP);
            options.open(dir)
        }
        .map_err(|e| open_err(e.to_string()))?;
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
            map_pages: None,
        };
        let store = Store {
            map_pages: store.find_map_pages(),
            ..store
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

    /// The range of the map, found from a pointer LMDB hands out into it (an entry of the main
    /// database, which lists the named ones and so is never empty here).
    fn find_map_pages(&self) -> Option<crate::resident::MapPages> {
        let rtxn = self.env.read_txn().ok()?;
        let main = self.env.open_database::<Bytes, Bytes>(&rtxn, None).ok()??;
        let (_, value) = main.iter(&rtxn).ok()?.next()?.ok()?;
        crate::resident::MapPages::containing(value.as_ptr())
    }

    /// Drops the map's pages from the process's resident set (see [`crate::resident`]).
    pub(crate) fn release_map_pages(&self) {
        if let Some(pages) = &self.map_pages {
            pages.release();
        }
    }

    /// The store's directory, for messages.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The map size in bytes after rounding: the most the store can hold.
    pub fn map_size(&self) -> usize {
        self.map_size
    }

    /// Bytes in use by all databases (excluding free pages), for status reporting.
    pub fn used_bytes(&self) -> Result<u64, StoreError> {
        self.env.non_free_pages_size().map_err(|e| self.lmdb(e))
    }

    /// Maps a heed error to a [`StoreError`] naming this store's path.
    pub(crate) fn lmdb(&self, e: heed::Error) -> StoreError {
        let detail = e.to_string();
        let path = self.path.clone();
        match e {
            heed::Error::Mdb(heed::MdbError::MapFull) => StoreError::Full {
                map_size: self.map_size,
            },
            heed::Error::Mdb(
                heed::MdbError::Corrupted | heed::MdbError::Invalid | heed::MdbError::PageNotFound,
            ) => StoreError::Corrupt { path, detail },
            _ => StoreError::Lmdb { path, detail },
        }
    }

    /// A store-level error for content this build cannot decode.
    pub(crate) fn corrupt(&self, detail: &str) -> StoreError {
        StoreError::Corrupt {
            path: self.path.clone(),
            detail: detail.to_string(),
        }
    }

    /// One `meta` value as text.
    pub(crate) fn meta_value(&self, name: &str) -> Result<Option<String>, StoreError> {
        let rtxn = self.env.read_txn().map_err(|e| self.lmdb(e))?;
        let v = self
            .meta
            .get(&rtxn, name.as_bytes())
            .map_err(|e| self.lmdb(e))?;
        Ok(v.map(|b| String::from_utf8_lossy(b).into_owned()))
    }
}
