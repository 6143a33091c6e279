//! `policy: redis` with `sync_rate > 0` (Kong's batching): the node counts locally and a background task
//! sends the counts to Redis in batches every `sync_rate` seconds, reading back the shared totals.
//!
//! Per window the node keeps one [`Entry`], shared by all its workers: `admitted` (requests it let through),
//! `sent` (how many of those are on Redis) and `others` (what the rest of the fleet had counted on Redis when
//! it last looked). A request passes when `others + admitted` stays within the limit: one atomic add per
//! window, no I/O. The first request of a window on this node has no entry yet: it is checked and counted on
//! Redis (the exact script of `sync_rate: -1`), and the reply seeds the entry.
//!
//! Every `sync_rate` seconds the task (on the background thread of [`crate::logging::runtime`], never on a
//! proxy worker) sends each entry's unsent count with one pipelined `INCRBY` per key and takes the reply, the
//! fleet's total, as the new `others`. An entry that counted nothing for [`IDLE_SYNCS`] syncs in a row is
//! dropped (so a sync costs what was counted lately, not every identifier ever seen); its next request reads
//! Redis again, as a new window's does. A failed sync marks nothing as sent, so the next one sends it again (one that timed out
//! after Redis applied it is counted twice: the error is on the strict side). When the plugin instance is
//! dropped (a reload or a delete), the task syncs once more and ends; a reload's new instance reads Redis
//! again, and the old one's last counts reach it within `sync_rate`, as another node's would.
//!
//! A request takes the shard's read lock of each of its windows just long enough to find the entry and add to
//! it (the node's workers share it), so a sync that drops an entry under the write lock never misses a count
//! added to it.
//!
//! Accuracy: one node alone is exact. With several, a node does not see what the others let through since
//! their last sync and its own last read, so a window can let through the limit plus what the other nodes let
//! through in the last `2 × sync_rate` seconds (and never more than the limit times the number of nodes).

use super::redis::{self, Target};
use super::window::PERIODS;
use crate::counters::Counted;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

const SHARDS: usize = 16;

/// Syncs in a row an entry may count nothing before it is dropped.
pub(super) const IDLE_SYNCS: u32 = 10;

/// A window on this node: (hash of identifier and period, window start).
pub(super) type Slot = (u64, u64);

/// One window's counts on this node.
struct Entry {
    /// Kong's Redis key.
    key: String,
    ttl_secs: u64,
    /// The window's end (Unix seconds): the entry is dropped once it has passed and its counts are sent.
    end: u64,
    admitted: AtomicU64,
    sent: AtomicU64,
    others: AtomicU64,
    /// Syncs in a row that found nothing to send.
    idle: AtomicU32,
}

impl Entry {
    /// Counts not sent yet (`admitted` read first: a seeding request adds to `sent` before `admitted`).
    fn unsent(&self) -> u64 {
        let admitted = self.admitted.load(Ordering::Acquire);
        admitted.saturating_sub(self.sent.load(Ordering::Acquire))
    }
}

/// The counters of one plugin instance, shared by the node's workers and its sync task.
pub(super) struct Batch {
    target: Arc<Target>,
    /// Read-locked by requests (every worker of the node at once), write-locked to add or drop an entry.
    shards: [RwLock<HashMap<Slot, Arc<Entry>>>; SHARDS],
}

/// A request's windows as Redis knows them: each key, its time to live and its window's end.
pub(super) struct Known {
    pub key: String,
    pub ttl_secs: u64,
    pub end: u64,
}

impl Batch {
    /// The counters of one instance, and their sync task every `every` on the background thread.
    pub(super) fn start(target: Arc<Target>, every: Duration) -> Result<Arc<Batch>, String> {
        let batch = Arc::new(Batch {
            target,
            shards: std::array::from_fn(|_| RwLock::default()),
        });
        let synced = batch.clone();
        crate::logging::runtime::handle()?.spawn(async move {
            loop {
                tokio::time::sleep(every).await;
                // Only this task holds it: the instance is gone. Send what is left, then stop.
                let last = Arc::strong_count(&synced) == 1;
                synced.sync().await;
                if last {
                    break;
                }
            }
        });
        Ok(batch)
    }

    fn shard(&self, slot: Slot) -> &RwLock<HashMap<Slot, Arc<Entry>>> {
        &self.shards[(slot.0 as usize) % SHARDS]
    }

    /// Counts a request in `slots` (limits in `limits`) on this node: `counts` gets each window's count after
    /// it, and the result is whether one is over its limit (then nothing is counted). None when a window has
    /// no entry and none is full: the request must be counted on Redis ([`Batch::learn`]).
    pub(super) fn count(&self, slots: &[Slot], limits: &[u64], counts: &mut [u64]) -> Option<bool> {
        let mut found: [Option<Arc<Entry>>; PERIODS.len()] = Default::default();
        for ((slot, entry), count) in slots.iter().zip(&mut found).zip(counts.iter_mut()) {
            let shard = self.shard(*slot).read().unwrap_or_else(|p| p.into_inner());
            *entry = shard.get(slot).cloned();
            if let Some(e) = entry {
                *count = e.admitted.fetch_add(1, Ordering::AcqRel)
                    + 1
                    + e.others.load(Ordering::Acquire);
            }
        }
        let found = &found[..slots.len()];
        let exceeded = counts.iter().zip(limits).any(|(c, l)| c > l);
        let missing = found.iter().any(Option::is_none);
        if exceeded || missing {
            for e in found.iter().flatten() {
                e.admitted.fetch_sub(1, Ordering::AcqRel);
            }
        }
        match (missing, exceeded) {
            (true, false) => None,
            (true, true) => {
                // Refused on a full window; the windows without an entry show their first count.
                for (count, e) in counts.iter_mut().zip(found) {
                    *count = e.as_ref().map_or(1, |_| *count);
                }
                Some(true)
            }
            (false, exceeded) => Some(exceeded),
        }
    }

    /// Seeds (or updates) the entries of `slots` from a check-and-count on Redis, and says whether the
    /// request still passes. It may not: a request that found no entry went to Redis while another request of
    /// this node seeded one and the node went on admitting locally (counts Redis has not seen yet); passing it
    /// too would let this node alone go over the limit. Such a request stays counted (on Redis and here), on
    /// the strict side.
    pub(super) fn learn(
        &self,
        slots: &[Slot],
        known: Vec<Known>,
        counted: &Counted,
        limits: &[u64],
    ) -> bool {
        let mut allowed = counted.allowed;
        for (((slot, known), count), limit) in
            slots.iter().zip(known).zip(&counted.counts).zip(limits)
        {
            let mut seeded = false;
            let entry = self
                .shard(*slot)
                .write()
                .unwrap_or_else(|p| p.into_inner())
                .entry(*slot)
                .or_insert_with(|| {
                    seeded = true;
                    Arc::new(Entry {
                        key: known.key,
                        ttl_secs: known.ttl_secs,
                        end: known.end,
                        admitted: AtomicU64::new(0),
                        sent: AtomicU64::new(0),
                        others: AtomicU64::new(0),
                        idle: AtomicU32::new(0),
                    })
                })
                .clone();
            if counted.allowed {
                // `sent` first: a sync in between sees nothing unsent rather than this request twice.
                entry.sent.fetch_add(1, Ordering::AcqRel);
                let before = entry.admitted.fetch_add(1, Ordering::AcqRel);
                if !seeded && before + 1 + entry.others.load(Ordering::Acquire) > *limit {
                    allowed = false;
                }
            }
            let others = count.saturating_sub(entry.sent.load(Ordering::Acquire));
            entry.others.fetch_max(others, Ordering::AcqRel);
        }
        allowed
    }

    /// Sends every entry's unsent count in one pipeline and takes the totals read back; drops the entries of
    /// ended windows, and those idle for a whole interval, once their counts are sent.
    async fn sync(&self) {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let mut batch: Vec<(Arc<Entry>, u64)> = Vec::new();
        for shard in &self.shards {
            let mut shard = shard.write().unwrap_or_else(|p| p.into_inner());
            shard.retain(|_, e| {
                let unsent = e.unsent();
                let idle = match unsent {
                    0 => e.idle.fetch_add(1, Ordering::AcqRel) + 1,
                    _ => {
                        e.idle.store(0, Ordering::Release);
                        0
                    }
                };
                let keep = e.end > now && idle <= IDLE_SYNCS;
                if keep || unsent > 0 {
                    batch.push((e.clone(), unsent));
                }
                keep
            });
        }
        if batch.is_empty() {
            return;
        }
        let adds: Vec<(&str, u64, u64)> = batch
            .iter()
            .map(|(e, unsent)| (e.key.as_str(), e.ttl_secs, *unsent))
            .collect();
        match redis::add_each(&self.target, &adds).await {
            Ok(totals) => {
                for ((e, unsent), total) in batch.iter().zip(totals) {
                    let sent = e.sent.fetch_add(*unsent, Ordering::AcqRel) + unsent;
                    e.others
                        .store(total.saturating_sub(sent), Ordering::Release);
                }
            }
            Err(error) => super::failure_logged(&error),
        }
    }
}

#[cfg(test)]
mod tests;
