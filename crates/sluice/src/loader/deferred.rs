//! Change sets written to the store in batches (DB mode, and a hybrid data plane's deltas): an applied change goes live at once, and its
//! entities reach the LMDB store with the others of the last [`Deferred::interval`], in one transaction,
//! instead of one commit (two `msync`s) per change on the node that serves them.
//!
//! The store is the node's copy for outages, not the source of truth: PostgreSQL (or the control plane)
//! is. It lags the live config by at most one interval (plus the write); a clean shutdown writes what is
//! pending ([`Loader::flush_store`](super::Loader::flush_store)), a crash loses at most that interval,
//! which the node reads again from the database at its next start (docs/db-mode.md, "The local store"),
//! or gets with the whole config its control plane sends a data plane that connects.
//!
//! Order is kept: every change set is queued while the caller holds the loader's `loading` lock, and a
//! whole-config commit (which also holds it) writes the queue first, so the store never takes an older
//! change after a newer one.

use super::commit::{commit_change_sets, EntityChange};
use sluice_store::Store;
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[cfg(test)]
mod tests;

/// One applied change set waiting for the store: the config hash it led to and its entities.
struct Pending {
    hash: String,
    changes: Vec<EntityChange>,
}

/// The queue of change sets not yet in the store, and how often it is written.
pub(super) struct Deferred {
    queue: Mutex<Vec<Pending>>,
    pub interval: Duration,
}

impl Deferred {
    /// Starts a thread that writes the queue to `store` every `interval`, for the life of the process.
    pub fn start(store: Store, interval: Duration) -> Arc<Deferred> {
        let deferred = Arc::new(Deferred {
            queue: Mutex::new(Vec::new()),
            interval,
        });
        let writer = deferred.clone();
        let spawned = std::thread::Builder::new()
            .name("sluice-store".into())
            .spawn(move || loop {
                std::thread::sleep(writer.interval);
                writer.flush(&store);
            });
        if let Err(e) = spawned {
            // Without the thread, the queue is still written before each whole-config commit and at
            // shutdown.
            tracing::error!(error = %e, "could not start the store writer thread");
        }
        deferred
    }

    /// Queues a change set that just went live.
    pub fn push(&self, hash: &str, changes: &[EntityChange]) {
        let pending = Pending {
            hash: hash.to_string(),
            changes: changes.to_vec(),
        };
        self.lock().push(pending);
    }

    /// Writes every queued change set to `store` in one transaction. A failed write keeps the queue
    /// (written with the next one) and is logged.
    pub fn flush(&self, store: &Store) {
        // The lock is held through the write, so a flush from another thread cannot write a later
        // queue before this one.
        let mut queue = self.lock();
        if queue.is_empty() {
            return;
        }
        let written = write(store, &queue);
        match written {
            Ok(()) => {
                tracing::debug!(sets = queue.len(), "queued changes written to the store");
                queue.clear();
            }
            Err(e) => tracing::error!(error = %e, sets = queue.len(),
                "could not write the applied changes to the store; retrying with the next batch"),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Pending>> {
        self.queue.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// One transaction for every queued set, in order.
fn write(store: &Store, queue: &[Pending]) -> Result<(), String> {
    let sets: Vec<(&str, &[EntityChange])> = (queue.iter())
        .map(|p| (p.hash.as_str(), p.changes.as_slice()))
        .collect();
    commit_change_sets(store, &sets)
}
