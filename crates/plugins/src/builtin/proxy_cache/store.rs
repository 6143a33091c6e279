//! proxy-cache's `memory` strategy: the stores behind Kong's shared dictionaries, one per
//! `memory.dictionary_name`, process-wide (shared by every worker, as Kong's `lua_shared_dict` is shared by
//! nginx's workers) and kept across config reloads in [`crate::state::PluginState`].
//!
//! A store is a fixed number of `Mutex`'d shards keyed by the text Kong hashes into its cache key (hashed
//! here with FxHash; the SHA-256 hex is computed once, on a miss, and kept in the entry for `X-Cache-Key`):
//! a hit locks one shard for a map lookup and an `Arc` clone, never for copying the response. Every entry has its
//! own deadline (the storage TTL) and is dropped when a lookup finds it expired. The total size of a store
//! (bodies, headers and a fixed overhead per entry) is bounded by `mem_cache_size` (Kong sizes
//! `kong_db_cache` with it; 128m by default); a store that goes over evicts expired entries first, then,
//! as a second-chance approximation of the shared dictionary's LRU, entries not read since the last sweep.

use bytes::Bytes;
use http::header::{HeaderName, AGE};
use http::{HeaderMap, HeaderValue, StatusCode};
use rustc_hash::FxHasher;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hash, Hasher};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

const SHARDS: usize = 16;

/// Bytes counted per entry besides its body and headers (the map slot, the `Arc`, the head).
const OVERHEAD: usize = 256;

/// Kong's default `mem_cache_size`.
pub const DEFAULT_CAPACITY: usize = 128 << 20;

/// A stored response, as Kong's memory strategy stores it (`status`, `headers`, `body`, `timestamp`,
/// `ttl`); the headers are kept without the hop-by-hop ones, ready to be sent on a hit.
#[derive(Debug)]
pub struct Entry {
    /// The key's SHA-256 hex (`X-Cache-Key`, and how the Admin API names the entry).
    pub hex: HeaderValue,
    pub status: StatusCode,
    pub headers: HeaderMap,
    /// The head of a hit that shows every cache header (the default): `headers`, then `Age` (a
    /// placeholder, set per hit), `X-Cache-Status: Hit` and `X-Cache-Key`, so a hit clones one map and
    /// replaces one value instead of inserting three (and growing the map).
    pub hit_headers: HeaderMap,
    pub body: Bytes,
    /// When it was stored, in seconds since the epoch (Kong's `ngx.time()`).
    pub timestamp: u64,
    /// The resource's TTL in seconds: `cache_ttl`, or from `Cache-Control`/`Expires` with `cache_control`.
    pub ttl: f64,
    /// When the store drops it (milliseconds since the epoch): the storage TTL.
    expires_ms: u64,
    size: usize,
    /// Read since the last eviction sweep (second chance).
    used: AtomicBool,
}

impl Entry {
    /// A response stored at `now_ms` for `storage_ttl` seconds.
    pub fn new(
        hex: HeaderValue,
        status: StatusCode,
        headers: HeaderMap,
        body: Bytes,
        ttl: f64,
        now_ms: u64,
        storage_ttl: f64,
    ) -> Entry {
        let head: usize = headers
            .iter()
            .map(|(n, v)| n.as_str().len() + v.len() + 32)
            .sum();
        let mut hit_headers = HeaderMap::with_capacity(headers.len() + 3);
        for (name, value) in &headers {
            hit_headers.append(name.clone(), value.clone());
        }
        hit_headers.insert(AGE, HeaderValue::from_static("0"));
        hit_headers.insert(X_CACHE_STATUS, HeaderValue::from_static("Hit"));
        hit_headers.insert(X_CACHE_KEY, hex.clone());
        Entry {
            size: body.len() + head + OVERHEAD,
            hex,
            status,
            headers,
            hit_headers,
            body,
            timestamp: now_ms / 1000,
            ttl,
            expires_ms: now_ms.saturating_add((storage_ttl.max(0.0) * 1000.0) as u64),
            used: AtomicBool::new(false),
        }
    }
}

pub(super) const X_CACHE_STATUS: HeaderName = HeaderName::from_static("x-cache-status");
pub(super) const X_CACHE_KEY: HeaderName = HeaderName::from_static("x-cache-key");

type Shard = HashMap<Box<str>, Arc<Entry>, BuildHasherDefault<FxHasher>>;

/// One dictionary: bounded, with per-entry deadlines.
pub struct MemoryStore {
    shards: [Mutex<Shard>; SHARDS],
    bytes: AtomicUsize,
    capacity: usize,
}

impl MemoryStore {
    pub fn new(capacity: usize) -> MemoryStore {
        MemoryStore {
            shards: std::array::from_fn(|_| Mutex::default()),
            bytes: AtomicUsize::new(0),
            capacity,
        }
    }

    fn shard(&self, i: usize) -> MutexGuard<'_, Shard> {
        self.shards[i].lock().unwrap_or_else(|p| p.into_inner())
    }

    fn index(key: &str) -> usize {
        let mut h = FxHasher::default();
        key.hash(&mut h);
        (h.finish() >> 32) as usize % SHARDS
    }

    /// The live entry under `key` at `now_ms` (an expired one is dropped).
    pub fn fetch(&self, key: &str, now_ms: u64) -> Option<Arc<Entry>> {
        let mut shard = self.shard(Self::index(key));
        let entry = shard.get(key)?;
        if entry.expires_ms <= now_ms {
            if let Some(gone) = shard.remove(key) {
                self.bytes.fetch_sub(gone.size, Ordering::Relaxed);
            }
            return None;
        }
        entry.used.store(true, Ordering::Relaxed);
        Some(entry.clone())
    }

    /// Stores `entry` under `key` (replacing what was there), then evicts while the store is over its
    /// size. False when the entry alone is larger than the store (Kong's dictionary refuses it too).
    pub fn store(&self, key: Box<str>, mut entry: Entry, now_ms: u64) -> bool {
        entry.size += key.len();
        if entry.size > self.capacity {
            return false;
        }
        let i = Self::index(&key);
        self.bytes.fetch_add(entry.size, Ordering::Relaxed);
        let over = {
            let mut shard = self.shard(i);
            if let Some(old) = shard.insert(key.clone(), Arc::new(entry)) {
                self.bytes.fetch_sub(old.size, Ordering::Relaxed);
            }
            self.bytes.load(Ordering::Relaxed) > self.capacity
        };
        if over {
            self.evict(i, now_ms, &key);
        }
        true
    }

    /// Drops expired entries, then entries not read since the last sweep (their mark is cleared as the
    /// sweep passes), then any, shard by shard from `first`, until the store fits; `kept` (the entry just
    /// stored) stays.
    fn evict(&self, first: usize, now_ms: u64, kept: &str) {
        for round in 0..3 {
            for n in 0..SHARDS {
                if self.bytes.load(Ordering::Relaxed) <= self.capacity {
                    return;
                }
                let mut shard = self.shard((first + n) % SHARDS);
                shard.retain(|k, e| {
                    let keep = &**k == kept
                        || self.bytes.load(Ordering::Relaxed) <= self.capacity
                        || match round {
                            0 => e.expires_ms > now_ms,
                            1 => e.used.swap(false, Ordering::Relaxed),
                            _ => false,
                        };
                    if !keep {
                        self.bytes.fetch_sub(e.size, Ordering::Relaxed);
                    }
                    keep
                });
            }
        }
    }

    /// Removes `key`; true when it was there (expired or not).
    pub fn purge(&self, key: &str) -> bool {
        match self.shard(Self::index(key)).remove(key) {
            Some(gone) => {
                self.bytes.fetch_sub(gone.size, Ordering::Relaxed);
                true
            }
            None => false,
        }
    }

    /// The live entry whose key hashes to `hex` (the Admin API's lookup: a scan, off the request path).
    pub fn find_hex(&self, hex: &str, now_ms: u64) -> Option<(Box<str>, Arc<Entry>)> {
        (0..SHARDS).find_map(|i| {
            self.shard(i)
                .iter()
                .find(|(_, e)| e.hex.as_bytes() == hex.as_bytes() && e.expires_ms > now_ms)
                .map(|(k, e)| (k.clone(), e.clone()))
        })
    }

    /// Removes everything.
    pub fn flush(&self) {
        for i in 0..SHARDS {
            let mut shard = self.shard(i);
            let freed: usize = shard.values().map(|e| e.size).sum();
            shard.clear();
            self.bytes.fetch_sub(freed, Ordering::Relaxed);
        }
    }

    /// The bound on [`MemoryStore::bytes`].
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Bytes held (as counted for the bound).
    pub fn bytes(&self) -> usize {
        self.bytes.load(Ordering::Relaxed)
    }

    /// Number of entries, expired ones included until a lookup or sweep drops them.
    pub fn len(&self) -> usize {
        (0..SHARDS).map(|i| self.shard(i).len()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Every dictionary's store, by name; each bounded by the node's `mem_cache_size`.
pub struct Dictionaries {
    capacity: AtomicUsize,
    stores: Mutex<HashMap<String, Arc<MemoryStore>>>,
}

impl Default for Dictionaries {
    fn default() -> Self {
        Dictionaries {
            capacity: AtomicUsize::new(DEFAULT_CAPACITY),
            stores: Mutex::default(),
        }
    }
}

impl Dictionaries {
    fn stores(&self) -> MutexGuard<'_, HashMap<String, Arc<MemoryStore>>> {
        self.stores.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The size of dictionaries made from now on (the node sets it from `mem_cache_size` before its first
    /// config is compiled).
    pub fn set_capacity(&self, bytes: usize) {
        self.capacity.store(bytes, Ordering::Relaxed);
    }

    /// The store named `name`, made on first use (when a config with it is compiled).
    pub fn open(&self, name: &str) -> Arc<MemoryStore> {
        let capacity = self.capacity.load(Ordering::Relaxed);
        self.stores()
            .entry(name.to_string())
            .or_insert_with(|| Arc::new(MemoryStore::new(capacity)))
            .clone()
    }

    /// The store named `name`, if some config used it.
    pub fn get(&self, name: &str) -> Option<Arc<MemoryStore>> {
        self.stores().get(name).cloned()
    }

    /// Each store's name, bytes held and bound, by name: what Kong reports of its shared dictionaries
    /// (`kong_memory_lua_shared_dict_bytes` / `_total_bytes`, `GET /status`'s `lua_shared_dicts`).
    pub fn usage(&self) -> Vec<(String, usize, usize)> {
        let mut all: Vec<_> = (self.stores().iter())
            .map(|(name, s)| (name.clone(), s.bytes(), s.capacity()))
            .collect();
        all.sort_unstable();
        all
    }
}
