//! The runtime state of one target: health with its transition counters, requests in flight and the
//! latency average. Shared by every snapshot that has the target (see [`super::Registry`]) and by every
//! worker, so it is all atomics: a report on the healthy path is loads only, and no lock is taken.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, LazyLock};
use std::time::{Duration, Instant};

/// What a health report counts (Kong's counters).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// A response with one of the `unhealthy.http_statuses`.
    Http,
    /// Connection refused, reset, or an invalid response.
    Tcp,
    /// Connect, write or read timeout.
    Timeout,
}

/// One target's shared state. Created healthy, as Kong does.
#[derive(Debug)]
pub struct TargetState {
    healthy: AtomicBool,
    successes: AtomicU32,
    /// Indexed by [`Failure`] as usize.
    failures: [AtomicU32; 3],
    inflight: AtomicU32,
    /// Microseconds; 0 means no sample yet.
    ewma_us: AtomicU64,
    /// When `ewma_us` was last updated, in ms since [`EPOCH`].
    ewma_at_ms: AtomicU64,
}

/// The clock origin of latency samples.
static EPOCH: LazyLock<Instant> = LazyLock::new(Instant::now);

/// How fast an unrefreshed latency average fades: after `DECAY` without a sample it is worth 1/e, so a
/// target that was slow once gets tried again instead of being starved for good.
const DECAY: Duration = Duration::from_secs(10);

impl Default for TargetState {
    fn default() -> Self {
        TargetState {
            healthy: AtomicBool::new(true),
            successes: AtomicU32::new(0),
            failures: Default::default(),
            inflight: AtomicU32::new(0),
            ewma_us: AtomicU64::new(0),
            ewma_at_ms: AtomicU64::new(0),
        }
    }
}

/// Decrements the target's in-flight count when dropped: held for as long as a request uses the target.
#[derive(Debug)]
pub struct InFlight(Arc<TargetState>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.inflight.fetch_sub(1, Ordering::Relaxed);
    }
}

impl TargetState {
    /// Whether the balancer may use this target.
    pub fn is_healthy(&self) -> bool {
        self.healthy.load(Ordering::Relaxed)
    }

    /// Requests currently using the target (least-connections, latency).
    pub fn inflight(&self) -> u32 {
        self.inflight.load(Ordering::Relaxed)
    }

    /// The latency average in microseconds (0 before the first sample).
    pub fn ewma_us(&self) -> u64 {
        self.ewma_us.load(Ordering::Relaxed)
    }

    /// The latency average faded by the time since its last sample (see [`DECAY`]).
    pub fn latency_cost(&self) -> f64 {
        let ewma = self.ewma_us() as f64;
        let age_ms = (EPOCH.elapsed().as_millis() as u64)
            .saturating_sub(self.ewma_at_ms.load(Ordering::Relaxed));
        ewma * (-(age_ms as f64) / DECAY.as_millis() as f64).exp()
    }

    /// Counts a request that starts using the target until the guard is dropped.
    pub fn start(self: &Arc<Self>) -> InFlight {
        self.inflight.fetch_add(1, Ordering::Relaxed);
        InFlight(self.clone())
    }

    /// Folds a response time into the average: a slower sample is taken at once (peak), a faster one
    /// pulls the average down by 30%, so a target that slows down loses traffic quickly and regains it
    /// gradually.
    pub fn record_latency(&self, took: Duration) {
        let sample = (took.as_micros() as u64).max(1);
        self.ewma_at_ms
            .store(EPOCH.elapsed().as_millis() as u64, Ordering::Relaxed);
        let _ = self
            .ewma_us
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |old| {
                Some(if old == 0 || sample >= old {
                    sample
                } else {
                    old - (old - sample) * 3 / 10
                })
            });
    }

    /// A good outcome. `threshold` is the `healthy.successes` of the check that saw it (0: this check
    /// never makes a target healthy). Returns true when the target just became healthy.
    pub fn report_success(&self, threshold: u32) -> bool {
        if self.is_healthy() {
            for f in &self.failures {
                if f.load(Ordering::Relaxed) != 0 {
                    f.store(0, Ordering::Relaxed);
                }
            }
            return false;
        }
        if threshold == 0 {
            return false;
        }
        let n = self.successes.fetch_add(1, Ordering::Relaxed) + 1;
        n >= threshold && self.set(true)
    }

    /// A bad outcome of `kind`; `threshold` is the matching `unhealthy` counter of the check that saw it
    /// (0: this kind never makes a target unhealthy). Returns true when the target just became unhealthy.
    pub fn report_failure(&self, kind: Failure, threshold: u32) -> bool {
        if !self.is_healthy() {
            if self.successes.load(Ordering::Relaxed) != 0 {
                self.successes.store(0, Ordering::Relaxed);
            }
            return false;
        }
        if threshold == 0 {
            return false;
        }
        let n = self.failures[kind as usize].fetch_add(1, Ordering::Relaxed) + 1;
        n >= threshold && self.set(false)
    }

    /// Sets the health from the Admin API (`POST .../healthy|unhealthy`); counters start over.
    pub fn set_by_admin(&self, healthy: bool) {
        self.set(healthy);
        self.reset_counters();
    }

    /// Changes the health; true when it was different. Counters start over on a change.
    fn set(&self, healthy: bool) -> bool {
        let changed = self
            .healthy
            .compare_exchange(!healthy, healthy, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok();
        if changed {
            self.reset_counters();
        }
        changed
    }

    fn reset_counters(&self) {
        self.successes.store(0, Ordering::Relaxed);
        for f in &self.failures {
            f.store(0, Ordering::Relaxed);
        }
    }
}
