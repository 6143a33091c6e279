//! Freeing a replaced snapshot off the proxy workers (on every config that goes live).
//!
//! Each request holds the snapshot it started on (an `Arc`), so under load the old snapshot usually
//! outlives the swap, and the last request to finish on it used to free it on its worker: the router,
//! the per-route facts and plugin chains of a 10,000-route config, and in DB-less mode the old config
//! itself, freed between two requests of that worker at every change. [`Retired`] keeps a reference to
//! each replaced snapshot, so a request's drop is only a decrement; the snapshot is freed once nothing
//! else holds it: at once when no request does, else by a sweep every [`SWEEP`] on the control runtime's
//! blocking pool.

use sluice_proxy::Snapshot;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How often snapshots still held by requests are looked at again.
const SWEEP: Duration = Duration::from_millis(20);

/// Replaced snapshots that requests may still hold.
#[derive(Default, Clone)]
pub(super) struct Retired(Arc<Mutex<Held>>);

#[derive(Default)]
struct Held {
    snapshots: Vec<Arc<Snapshot>>,
    /// A sweep task is running (it ends once `snapshots` is empty).
    sweeping: bool,
}

impl Held {
    /// Takes out the snapshots that only this list holds, for the caller to free.
    fn unheld(&mut self) -> Vec<Arc<Snapshot>> {
        let (free, held) = std::mem::take(&mut self.snapshots)
            .into_iter()
            .partition(|s| Arc::strong_count(s) == 1);
        self.snapshots = held;
        free
    }
}

impl Retired {
    /// Takes `old`, the snapshot just replaced: it is freed here when no request holds it, else once the
    /// last one is done (by a sweep on the runtime when there is one, else at the next call).
    pub fn retire(&self, old: Arc<Snapshot>) {
        let mut held = self.lock();
        held.snapshots.push(old);
        let free = held.unheld();
        let sweep = !held.snapshots.is_empty() && !held.sweeping;
        let runtime = tokio::runtime::Handle::try_current().ok().filter(|_| sweep);
        held.sweeping |= runtime.is_some();
        drop(held);
        drop(free);
        if let Some(runtime) = runtime {
            runtime.spawn(self.clone().sweep());
        }
    }

    /// Frees what nothing holds any more every [`SWEEP`], until nothing is left.
    async fn sweep(self) {
        loop {
            tokio::time::sleep(SWEEP).await;
            let mut held = self.lock();
            let free = held.unheld();
            held.sweeping = !held.snapshots.is_empty();
            let again = held.sweeping;
            drop(held);
            if !free.is_empty() {
                // Freeing a large snapshot takes a while: not on the runtime's thread.
                tokio::task::spawn_blocking(move || drop(free));
            }
            if !again {
                return;
            }
        }
    }

    /// How many replaced snapshots are still held (by requests).
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.lock().snapshots.len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Held> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}
