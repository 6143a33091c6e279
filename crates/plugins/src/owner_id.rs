//! Ids for the owners of per-worker state. A plugin keeps some state in each worker's thread-local map
//! instead of behind a lock the workers share (basic-auth's verified values, the Redis policy's calls in
//! flight); the map's entries are keyed by their owner's id, and an owner made by a newer snapshot gets a
//! new id, so a worker never mistakes an older owner's entries for its own.

use std::sync::atomic::{AtomicU64, Ordering};

/// An id never handed out before in this process (`Default` makes the next one).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct OwnerId(u64);

impl Default for OwnerId {
    fn default() -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        OwnerId(NEXT.fetch_add(1, Ordering::Relaxed))
    }
}
