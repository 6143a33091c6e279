//! Fixed-bucket histogram with atomic per-bucket counters, rendered in Prometheus text format.

use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};

/// Bucket upper bounds (ms) used for `kong_kong_latency_ms` (Kong 3.9's exporter values).
pub const KONG_LATENCY_BUCKETS: &[u64] = &[
    1, 2, 5, 7, 10, 15, 20, 30, 50, 75, 100, 200, 500, 750, 1000, 3000, 6000,
];
/// Bucket upper bounds (ms) for upstream/request latency (Kong exporter values).
pub const UPSTREAM_LATENCY_BUCKETS: &[u64] = &[
    25, 50, 80, 100, 250, 400, 700, 1000, 2000, 5000, 10000, 30000, 60000,
];

/// A histogram whose slots are allocated once; `observe` is lock- and allocation-free.
pub struct Histogram {
    bounds: &'static [u64],
    /// Non-cumulative counts; the last slot is the `+Inf` overflow.
    counts: Box<[AtomicU64]>,
    sum: AtomicU64,
}

impl Histogram {
    /// Creates a histogram over `bounds` (ascending upper bounds); call at snapshot compile time.
    pub fn new(bounds: &'static [u64]) -> Self {
        let counts = (0..=bounds.len()).map(|_| AtomicU64::new(0)).collect();
        Histogram {
            bounds,
            counts,
            sum: AtomicU64::new(0),
        }
    }

    /// The bucket upper bounds.
    pub fn bounds(&self) -> &'static [u64] {
        self.bounds
    }

    /// Records one observation; called per request on the hot path.
    pub fn observe(&self, value: u64) {
        let idx = self.bounds.partition_point(|&b| b < value);
        self.counts[idx].fetch_add(1, Ordering::Relaxed);
        self.sum.fetch_add(value, Ordering::Relaxed);
    }

    /// Appends the `_bucket`/`_sum`/`_count` lines for `name` with the given rendered `labels`
    /// (e.g. `service="s"`); called only when scraped.
    pub fn render(&self, out: &mut String, name: &str, labels: &str) {
        let mut totals = Totals::new(self.bounds);
        totals.add(self);
        totals.render(out, name, labels);
    }
}

/// Several histograms over the same bounds summed (one per worker), for rendering.
pub struct Totals {
    bounds: &'static [u64],
    counts: Vec<u64>,
    sum: u64,
}

impl Totals {
    pub fn new(bounds: &'static [u64]) -> Totals {
        Totals {
            bounds,
            counts: vec![0; bounds.len() + 1],
            sum: 0,
        }
    }

    /// Adds a histogram's current counts (its bounds must be these bounds).
    pub fn add(&mut self, h: &Histogram) {
        for (total, c) in self.counts.iter_mut().zip(h.counts.iter()) {
            *total += c.load(Ordering::Relaxed);
        }
        self.sum += h.sum.load(Ordering::Relaxed);
    }

    /// Observations so far.
    pub fn count(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// The `_bucket` (cumulative, then `+Inf`), `_count` and `_sum` lines.
    pub fn render(&self, out: &mut String, name: &str, labels: &str) {
        let sep = if labels.is_empty() { "" } else { "," };
        let mut cumulative = 0;
        for (i, c) in self.counts.iter().enumerate() {
            cumulative += c;
            let le = self
                .bounds
                .get(i)
                .map_or_else(|| "+Inf".to_string(), |b| b.to_string());
            let _ = writeln!(
                out,
                "{name}_bucket{{{labels}{sep}le=\"{le}\"}} {cumulative}"
            );
        }
        let _ = writeln!(out, "{name}_count{{{labels}}} {cumulative}");
        let _ = writeln!(out, "{name}_sum{{{labels}}} {}", self.sum);
    }
}

#[cfg(test)]
mod tests;
