//! The upstream side's own metrics: upstream connections taken from the pool vs opened, counted per worker
//! shard. Also the calling thread's worker index, which picks the shard here and in the proxy's
//! per-request metrics.

use sluice_metrics::Counter;
use std::cell::Cell;
use std::sync::OnceLock;

thread_local! {
    static WORKER: Cell<usize> = const { Cell::new(0) };
}

/// Marks the calling thread as worker `index` (its metrics shard).
pub fn set_worker(index: usize) {
    WORKER.with(|w| w.set(index));
}

/// The calling thread's worker index (0 on threads that are not workers).
#[inline]
pub fn worker() -> usize {
    WORKER.with(Cell::get)
}

/// Upstream connections taken from the pool vs opened, per worker shard.
static POOL_REUSED: OnceLock<Counter> = OnceLock::new();
static POOL_OPENED: OnceLock<Counter> = OnceLock::new();

fn pool_counter(which: &'static OnceLock<Counter>) -> &'static Counter {
    which.get_or_init(|| Counter::new(std::thread::available_parallelism().map_or(1, |n| n.get())))
}

/// Counts an upstream connection checkout (hot path: one relaxed add on the worker's own cache line).
pub fn count_checkout(reused: bool) {
    let which = if reused { &POOL_REUSED } else { &POOL_OPENED };
    pool_counter(which).add(worker(), 1);
}

/// The upstream side's counters, in the prometheus text format.
pub fn render(out: &mut String) {
    sluice_metrics::kong::family(
        out,
        "sluice_upstream_connections_total",
        "counter",
        "Upstream connections used for requests: taken from the keep-alive pool (reused) or opened (new)",
    );
    for (kind, which) in [("reused", &POOL_REUSED), ("new", &POOL_OPENED)] {
        let _ = std::fmt::Write::write_fmt(
            out,
            format_args!(
                "sluice_upstream_connections_total{{kind=\"{kind}\"}} {}\n",
                pool_counter(which).value()
            ),
        );
    }
}
