//! State that outlives a config snapshot (rate-limit counters, logging queues, proxy-cache's stores), owned by the
//! [`crate::Registry`].

use crate::logging::shared::LogQueues;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

const SHARDS: usize = 64;

/// Fixed-window counters keyed by a 64-bit hash of (plugin id, identifier, period) and the window start.
/// Sharded so that concurrent requests rarely share a lock (a count is read and changed only under its
/// shard's lock); expired windows are swept lazily. The key is
/// already a hash with a secret seed (rate-limiting's `counter_keys`), so the map mixes it with Fx
/// instead of hashing it again with SipHash.
type Shard = HashMap<(u64, u64), (u64, u64), rustc_hash::FxBuildHasher>;

pub struct PluginState {
    /// (key, window start) → (window end, count).
    shards: [Mutex<Shard>; SHARDS],
    inserts: AtomicU64,
    /// Queues of `http-log` / `file-log`, kept while some snapshot uses them.
    log_queues: LogQueues,
    /// proxy-cache's stores, by dictionary name.
    proxy_caches: crate::builtin::proxy_cache::store::Dictionaries,
    /// The database's counters (`policy: cluster`), set once in DB mode.
    pub(crate) cluster: std::sync::OnceLock<Arc<dyn crate::counters::ClusterCounters>>,
    /// The oauth2 plugin's codes and tokens, set once in DB mode.
    oauth2: std::sync::OnceLock<Arc<crate::builtin::oauth2::store::Store>>,
}

impl Default for PluginState {
    fn default() -> Self {
        PluginState {
            shards: std::array::from_fn(|_| Mutex::default()),
            inserts: AtomicU64::new(0),
            log_queues: LogQueues::default(),
            proxy_caches: Default::default(),
            cluster: std::sync::OnceLock::new(),
            oauth2: std::sync::OnceLock::new(),
        }
    }
}

impl PluginState {
    /// The logging queues shared across snapshots.
    pub fn log_queues(&self) -> &LogQueues {
        &self.log_queues
    }

    /// proxy-cache's stores (Kong's shared dictionaries), kept across reloads.
    pub fn proxy_caches(&self) -> &crate::builtin::proxy_cache::store::Dictionaries {
        &self.proxy_caches
    }

    /// The database's counters for `policy: cluster`; None on a node without a database.
    pub fn cluster_counters(&self) -> Option<Arc<dyn crate::counters::ClusterCounters>> {
        self.cluster.get().cloned()
    }

    /// Where the oauth2 plugin keeps codes and tokens (DB mode); set once, when the node starts.
    pub fn set_oauth2_store(&self, db: Arc<dyn crate::builtin::oauth2::store::OAuth2Store>) {
        let _ = self
            .oauth2
            .set(Arc::new(crate::builtin::oauth2::store::Store::new(db)));
    }

    /// The oauth2 plugin's store; None on a node without a database.
    pub fn oauth2_store(&self) -> Option<Arc<crate::builtin::oauth2::store::Store>> {
        self.oauth2.get().cloned()
    }

    /// Adds one to the counter of `key` in the window starting at `window_start` (seconds) and returns the
    /// new count. Exact under concurrency: the increment and the read are one atomic operation.
    pub fn increment(&self, key: u64, window_start: u64, window_len: u64, now: u64) -> u64 {
        self.add(key, window_start, window_len, now, 1)
    }

    /// Adds `by` to the counter of `key` in the window starting at `window_start`; the new count.
    pub fn add(&self, key: u64, window_start: u64, window_len: u64, now: u64, by: u64) -> u64 {
        let mut map = self.shards[(key as usize) % SHARDS]
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if let Some((_, count)) = map.get_mut(&(key, window_start)) {
            *count += by;
            return *count;
        }
        if self
            .inserts
            .fetch_add(1, Ordering::Relaxed)
            .is_multiple_of(256)
        {
            map.retain(|_, (end, _)| *end > now);
        }
        map.insert((key, window_start), (window_start + window_len, by));
        by
    }

    /// Gives back one count (a refused request's increment).
    pub fn decrement(&self, key: u64, window_start: u64) {
        let mut shard = self.shards[(key as usize) % SHARDS]
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if let Some((_, count)) = shard.get_mut(&(key, window_start)) {
            *count = count.saturating_sub(1);
        }
    }

    /// The current count without counting (for tests and headers).
    pub fn get(&self, key: u64, window_start: u64) -> u64 {
        let shard = self.shards[(key as usize) % SHARDS]
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        shard
            .get(&(key, window_start))
            .map_or(0, |(_, count)| *count)
    }

    /// Drops every counter whose window ended before `now`.
    pub fn sweep(&self, now: u64) {
        for shard in &self.shards {
            shard
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .retain(|_, (end, _)| *end > now);
        }
    }

    /// Number of live counters (for tests of eviction).
    pub fn len(&self) -> usize {
        self.shards
            .iter()
            .map(|s| s.lock().unwrap_or_else(|p| p.into_inner()).len())
            .sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
