//! Cache-line padded sharded counter: workers add to their own shard, scrapes sum all shards.

use std::sync::atomic::{AtomicU64, Ordering};

/// One shard on its own cache line so workers never contend on the same line.
#[repr(align(64))]
#[derive(Default)]
struct Shard(AtomicU64);

/// A counter with one shard per worker; `add` is lock- and allocation-free.
pub struct Counter {
    shards: Box<[Shard]>,
}

impl Counter {
    /// Creates a counter with `workers` shards (at least one); call at snapshot compile time.
    pub fn new(workers: usize) -> Self {
        Counter {
            shards: (0..workers.max(1)).map(|_| Shard::default()).collect(),
        }
    }

    /// Adds `n` on behalf of worker `worker` (wrapped to the shard count); per-request hot path.
    pub fn add(&self, worker: usize, n: u64) {
        self.shards[worker % self.shards.len()]
            .0
            .fetch_add(n, Ordering::Relaxed);
    }

    /// Sums all shards; called only when scraped.
    pub fn value(&self) -> u64 {
        self.shards
            .iter()
            .map(|s| s.0.load(Ordering::Relaxed))
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_sum_on_read_and_worker_ids_wrap() {
        let c = Counter::new(2);
        c.add(0, 3);
        c.add(1, 4);
        c.add(5, 1);
        assert_eq!(c.value(), 8);
    }
}
