//! A bounded queue of serialized log records, drained in batches on the `sluice-log` thread with Kong's
//! `queue` semantics: batches of up to `max_batch_size` records, gathered for at most `max_coalescing_delay`
//! seconds; a failed batch is retried after `initial_retry_delay`, doubling up to `max_retry_delay`, and given
//! up once `max_retry_time` seconds passed since its first attempt.
//!
//! Bound: at most `max_entries` records (and `max_bytes` bytes, when set) are waiting or being delivered at
//! once; a record pushed beyond that is dropped and counted. Kong evicts the *oldest* waiting record instead;
//! Sluice refuses the new one, because the producer side is a lock-free channel that cannot evict (the
//! effect for a dead sink is the same: a fixed amount of memory, the overflow counted and warned about).
//!
//! `concurrency_limit: -1` (Kong: deliver each record on its own timer) delivers every record as its own
//! batch, all concurrently; the bound still applies.

#[cfg(test)]
mod tests;

use super::stats::totals;
use bytes::Bytes;
use serde::Deserialize;
use sluice_model::schema::{Field, Schema};
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};
use tokio::sync::mpsc;

/// Kong's `queue` record of a logging plugin (durations in seconds, as in Kong).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct QueueConfig {
    /// Records per delivery (1 = each record alone).
    pub max_batch_size: usize,
    /// Seconds to wait for a batch to fill after its first record arrived.
    pub max_coalescing_delay: f64,
    /// Records waiting or in delivery before new ones are dropped.
    pub max_entries: usize,
    /// Bytes waiting or in delivery before new records are dropped (unbounded when absent).
    pub max_bytes: Option<u64>,
    /// Seconds after a batch's first failed attempt before it is given up (-1: never retry).
    pub max_retry_time: f64,
    /// Seconds before the first retry; doubled for each further retry.
    pub initial_retry_delay: f64,
    /// Upper bound of the retry delay, in seconds.
    pub max_retry_delay: f64,
    /// 1: one delivery at a time (in order); -1: every record delivered on its own, concurrently.
    pub concurrency_limit: i64,
}

impl Default for QueueConfig {
    /// Kong's defaults.
    fn default() -> Self {
        QueueConfig {
            max_batch_size: 1,
            max_coalescing_delay: 1.0,
            max_entries: 10_000,
            max_bytes: None,
            max_retry_time: 60.0,
            initial_retry_delay: 0.01,
            max_retry_delay: 60.0,
            concurrency_limit: 1,
        }
    }
}

/// The schema of Kong's `queue` record (fields, defaults and bounds as in Kong 3.x).
pub fn queue_schema() -> Schema {
    Schema::new(vec![
        (
            "max_batch_size",
            Field::integer().default(1).between(1.0, 1_000_000.0),
        ),
        (
            "max_coalescing_delay",
            Field::number().default(1).between(0.0, 3600.0),
        ),
        (
            "max_entries",
            Field::integer().default(10_000).between(1.0, 1_000_000.0),
        ),
        ("max_bytes", Field::integer()),
        ("max_retry_time", Field::number().default(60)),
        (
            "initial_retry_delay",
            Field::number().default(0.01).between(0.001, 1_000_000.0),
        ),
        (
            "max_retry_delay",
            Field::number().default(60).between(0.001, 1_000_000.0),
        ),
        (
            "concurrency_limit",
            Field::integer().default(1).one_of_int(&[-1, 1]),
        ),
    ])
}

/// Seconds as a duration, clamped to [0, ten years] so that adding it to an instant cannot overflow.
pub(crate) fn secs(s: f64) -> Duration {
    const TEN_YEARS: f64 = 10.0 * 365.0 * 86400.0;
    Duration::try_from_secs_f64(s.clamp(0.0, TEN_YEARS)).unwrap_or_default()
}

/// The wait before retry number `attempt` (0-based): `initial_retry_delay · 2^attempt`, capped.
pub fn retry_delay(config: &QueueConfig, attempt: u32) -> Duration {
    let doubled = config.initial_retry_delay * 2f64.powi(attempt.min(64) as i32);
    secs(doubled.min(config.max_retry_delay))
}

/// A record written into a vector, ready to queue. The spare capacity is given back first: `Bytes::from` a
/// vector with room left allocates a second, shared header for it (freed again, across threads, on the
/// log thread), while a full vector becomes a `Bytes` as it is; shrinking a block by less than half is
/// done in place by mimalloc.
pub fn record(mut v: Vec<u8>) -> Bytes {
    v.shrink_to_fit();
    Bytes::from(v)
}

/// Where a queue delivers its batches (an HTTP endpoint, a file). Runs on the `sluice-log` thread.
pub trait Sink: Send + Sync + 'static {
    /// Delivers one batch of serialized records; an error makes the queue retry the same batch.
    fn deliver(&self, batch: &[Bytes]) -> impl Future<Output = Result<(), String>> + Send;

    /// How many waiting records one delivery may take when `max_batch_size` is smaller: more than 1 for
    /// a sink whose output is the same whether records come one by one or together (statsd's lines, one
    /// datagram each or on one TCP stream), so that a busy worker's records cost one delivery per wake-up
    /// of the log thread instead of one each. Records are never held back to fill such a delivery.
    fn merges_up_to(&self) -> usize {
        1
    }
}

/// Counts of one queue, for tests and diagnostics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueueStats {
    /// Records waiting or being delivered.
    pub pending: usize,
    /// Records delivered.
    pub sent: u64,
    /// Records refused because the queue was full.
    pub dropped: u64,
    /// Records given up after `max_retry_time`.
    pub failed: u64,
}

struct Shared {
    plugin: &'static str,
    /// Identifies the queue in warnings (e.g. the endpoint or file path).
    name: String,
    config: QueueConfig,
    pending: AtomicUsize,
    bytes: AtomicU64,
    sent: AtomicU64,
    dropped: AtomicU64,
    failed: AtomicU64,
    /// Milliseconds since the epoch of the last warning (queue full, delivery failed or given up).
    last_warn: AtomicU64,
    /// Set when the last handle is gone (the plugin left the config): failures are then not retried.
    closed: AtomicBool,
}

/// The producer side of a queue, held by plugin instances. Dropping the last handle closes the queue: the
/// drain task delivers what is left (retrying as configured) and ends.
pub struct Queue {
    tx: mpsc::UnboundedSender<Bytes>,
    shared: Arc<Shared>,
}

impl Queue {
    /// Starts a queue whose drain task runs on `rt` and delivers to `sink`.
    pub fn start<S: Sink>(
        plugin: &'static str,
        name: String,
        config: QueueConfig,
        sink: S,
        rt: &tokio::runtime::Handle,
    ) -> Queue {
        let (tx, rx) = mpsc::unbounded_channel();
        let shared = Arc::new(Shared {
            plugin,
            name,
            config,
            pending: AtomicUsize::new(0),
            bytes: AtomicU64::new(0),
            sent: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            last_warn: AtomicU64::new(0),
            closed: AtomicBool::new(false),
        });
        rt.spawn(drain(rx, shared.clone(), Arc::new(sink)));
        Queue { tx, shared }
    }

    /// Queues one record without blocking; false when it was dropped because the queue is full.
    pub fn push(&self, record: Bytes) -> bool {
        let s = &self.shared;
        if s.pending.fetch_add(1, Ordering::AcqRel) >= s.config.max_entries {
            s.pending.fetch_sub(1, Ordering::AcqRel);
            return self.drop_record();
        }
        let len = record.len() as u64;
        if let Some(max) = s.config.max_bytes {
            if s.bytes.fetch_add(len, Ordering::AcqRel) + len > max {
                s.bytes.fetch_sub(len, Ordering::AcqRel);
                s.pending.fetch_sub(1, Ordering::AcqRel);
                return self.drop_record();
            }
        }
        if let Err(refused) = self.tx.send(record) {
            s.release(std::slice::from_ref(&refused.0));
            return self.drop_record();
        }
        true
    }

    /// Whether a record pushed now would be dropped for `max_entries` (a hint: callers skip building a
    /// record that could not be queued, and count it with [`Queue::refuse`]).
    pub fn is_full(&self) -> bool {
        self.shared.pending.load(Ordering::Relaxed) >= self.shared.config.max_entries
    }

    /// Counts a record that was not even built because the queue is full.
    pub fn refuse(&self) {
        self.drop_record();
    }

    /// The queue's counts right now.
    pub fn stats(&self) -> QueueStats {
        let s = &self.shared;
        QueueStats {
            pending: s.pending.load(Ordering::Acquire),
            sent: s.sent.load(Ordering::Acquire),
            dropped: s.dropped.load(Ordering::Acquire),
            failed: s.failed.load(Ordering::Acquire),
        }
    }

    /// The state the drain task shares, to watch a queue after its handle is dropped.
    #[cfg(test)]
    fn shared(&self) -> Arc<Shared> {
        self.shared.clone()
    }

    /// Counts a refused record and warns at most every 10 seconds per queue.
    fn drop_record(&self) -> bool {
        let s = &self.shared;
        let dropped = s.dropped.fetch_add(1, Ordering::AcqRel) + 1;
        totals(s.plugin).dropped.fetch_add(1, Ordering::Relaxed);
        if s.time_to_warn() {
            tracing::warn!(
                plugin = s.plugin,
                queue = %s.name,
                dropped,
                max_entries = s.config.max_entries,
                "{} queue full, log records dropped ({dropped} so far)",
                s.plugin
            );
        }
        false
    }
}

impl Drop for Queue {
    fn drop(&mut self) {
        self.shared.closed.store(true, Ordering::Release);
    }
}

impl Shared {
    /// True at most once per 10 s per queue. Drops and failed deliveries are always counted (`/metrics`);
    /// saying so is bounded, so a dead sink (a missing `/dev/log`, a receiver down) does not write a log line
    /// per record.
    fn time_to_warn(&self) -> bool {
        let now = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        let last = self.last_warn.load(Ordering::Acquire);
        now.saturating_sub(last) >= 10_000
            && self
                .last_warn
                .compare_exchange(last, now, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
    }

    fn closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Counts records given up.
    fn lost(&self, n: usize) {
        self.failed.fetch_add(n as u64, Ordering::AcqRel);
        totals(self.plugin)
            .failed
            .fetch_add(n as u64, Ordering::Relaxed);
    }

    /// Forgets delivered or abandoned records in the bound.
    fn release(&self, batch: &[Bytes]) {
        self.pending.fetch_sub(batch.len(), Ordering::AcqRel);
        if self.config.max_bytes.is_some() {
            let bytes: u64 = batch.iter().map(|b| b.len() as u64).sum();
            self.bytes.fetch_sub(bytes, Ordering::AcqRel);
        }
    }
}

/// How often a busy queue looks for new records. Senders never wake the drain task while records keep
/// coming (a cross-thread wake-up per record would cost the workers more than the rest of the log phase);
/// only an idle queue, one that found nothing for a whole tick, asks to be woken by the next record.
const TICK: Duration = Duration::from_millis(5);

/// Moves waiting records into `batch` (up to `max`) without waiting; false once every handle is gone and
/// the channel is empty.
fn take(rx: &mut mpsc::UnboundedReceiver<Bytes>, batch: &mut Vec<Bytes>, max: usize) -> bool {
    while batch.len() < max {
        match rx.try_recv() {
            Ok(record) => batch.push(record),
            Err(mpsc::error::TryRecvError::Empty) => return true,
            Err(mpsc::error::TryRecvError::Disconnected) => return false,
        }
    }
    true
}

/// Lets `batch` fill up to `max` records for at most `delay` (Kong's `max_coalescing_delay`). After the
/// first tick it sleeps as long as the records seen so far say the rest needs to arrive, so filling a batch
/// of 100 takes a few wake-ups of the log thread rather than one per tick.
async fn coalesce(
    rx: &mut mpsc::UnboundedReceiver<Bytes>,
    batch: &mut Vec<Bytes>,
    max: usize,
    delay: Duration,
) {
    let start = Instant::now();
    let deadline = start + delay;
    let first = batch.len();
    while take(rx, batch, max) && batch.len() < max {
        let now = Instant::now();
        let left = deadline.saturating_duration_since(now);
        if left.is_zero() {
            break;
        }
        tokio::time::sleep(
            fill_time(now - start, batch.len() - first, max - batch.len()).min(left),
        )
        .await;
    }
}

/// The longest single wait while a batch fills: records arriving faster than they did so far (a burst
/// after a trickle) wait at most this long for the batch to go out, so the queue cannot fill meanwhile.
const MAX_FILL_WAIT: Duration = Duration::from_millis(40);

/// How long to wait for `missing` more records when `arrived` came in `elapsed`: at that rate, the time
/// the missing ones need, between a [`TICK`] (also when nothing arrived yet) and [`MAX_FILL_WAIT`].
fn fill_time(elapsed: Duration, arrived: usize, missing: usize) -> Duration {
    if arrived == 0 {
        return TICK;
    }
    let per_record = elapsed / arrived.min(u32::MAX as usize) as u32;
    per_record
        .saturating_mul(missing.min(u32::MAX as usize) as u32)
        .clamp(TICK, MAX_FILL_WAIT)
}

/// Takes batches off the channel until every handle is gone and the channel is empty. Once closed, a
/// failed delivery ends the queue: what is left is counted as lost rather than retried for a sink that
/// may stay dead, so a removed plugin never keeps a task alive for long.
async fn drain<S: Sink>(mut rx: mpsc::UnboundedReceiver<Bytes>, shared: Arc<Shared>, sink: Arc<S>) {
    let max_batch = shared.config.max_batch_size.max(1);
    // What one delivery takes of what is already waiting (only `max_batch` are waited for).
    let max_taken = max_batch.max(sink.merges_up_to());
    let delay = secs(shared.config.max_coalescing_delay);
    let mut batch = Vec::with_capacity(max_taken.min(1024));
    let mut found_nothing = false;
    loop {
        let open = take(&mut rx, &mut batch, max_taken);
        if batch.is_empty() {
            if !open {
                return;
            }
            if !found_nothing {
                tokio::time::sleep(TICK).await;
                found_nothing = true;
                continue;
            }
            if rx.recv_many(&mut batch, max_taken).await == 0 {
                return;
            }
        }
        found_nothing = false;
        coalesce(&mut rx, &mut batch, max_batch, delay).await;
        if shared.config.concurrency_limit < 0 {
            for record in batch.drain(..) {
                let (sink, shared) = (sink.clone(), shared.clone());
                tokio::spawn(async move {
                    let one = [record];
                    deliver(&*sink, &one, &shared).await
                });
            }
            continue;
        }
        let delivered = deliver(&*sink, &batch, &shared).await;
        batch.clear();
        if !delivered && shared.closed() {
            take(&mut rx, &mut batch, usize::MAX);
            shared.lost(batch.len());
            shared.release(&batch);
            return;
        }
    }
}

/// Delivers one batch, retrying with exponential backoff until it succeeds or `max_retry_time` passed (or
/// the queue closed); true when it was delivered.
async fn deliver<S: Sink>(sink: &S, batch: &[Bytes], shared: &Shared) -> bool {
    let started = Instant::now();
    let mut attempt = 0;
    let delivered = loop {
        match sink.deliver(batch).await {
            Ok(()) => {
                shared.sent.fetch_add(batch.len() as u64, Ordering::AcqRel);
                break true;
            }
            Err(error) => {
                if shared.closed() || started.elapsed().as_secs_f64() > shared.config.max_retry_time
                {
                    shared.lost(batch.len());
                    if !shared.time_to_warn() {
                        break false;
                    }
                    tracing::error!(
                        plugin = shared.plugin, queue = %shared.name, records = batch.len(), %error,
                        "{} gave up delivering log records (max_retry_time passed or the plugin was removed); they are lost", shared.plugin
                    );
                    break false;
                }
                if attempt == 0 && shared.time_to_warn() {
                    tracing::warn!(
                        plugin = shared.plugin, queue = %shared.name, %error,
                        "{} delivery failed; retrying", shared.plugin
                    );
                }
                tokio::time::sleep(retry_delay(&shared.config, attempt)).await;
                attempt += 1;
            }
        }
    };
    shared.release(batch);
    delivered
}
