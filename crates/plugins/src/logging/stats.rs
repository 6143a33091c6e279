//! Process-wide counters of the logging queues (for the metrics endpoint) and the file reopen signal.

use std::sync::atomic::{AtomicU64, Ordering};

/// Totals of one logging plugin, summed over all its queues since the process started.
#[derive(Default)]
pub(crate) struct Totals {
    /// Records refused because their queue was full (`max_entries` / `max_bytes`).
    pub dropped: AtomicU64,
    /// Records given up after `max_retry_time` of failed deliveries.
    pub failed: AtomicU64,
}

static HTTP_LOG: Totals = Totals {
    dropped: AtomicU64::new(0),
    failed: AtomicU64::new(0),
};
static FILE_LOG: Totals = Totals {
    dropped: AtomicU64::new(0),
    failed: AtomicU64::new(0),
};
static OTHER: Totals = Totals {
    dropped: AtomicU64::new(0),
    failed: AtomicU64::new(0),
};

/// The totals of the plugin named `plugin` (queues of unknown plugins share one bucket).
pub(crate) fn totals(plugin: &str) -> &'static Totals {
    match plugin {
        "http-log" => &HTTP_LOG,
        "file-log" => &FILE_LOG,
        _ => &OTHER,
    }
}

/// Records of `plugin` (`http-log`, `file-log`) dropped because a queue was full, since the process started.
/// Publish it as a counter: a rising value means a log sink is too slow or down.
pub fn dropped_records(plugin: &str) -> u64 {
    totals(plugin).dropped.load(Ordering::Relaxed)
}

/// Records of `plugin` lost after their delivery kept failing for `max_retry_time`, since the process started.
pub fn failed_records(plugin: &str) -> u64 {
    totals(plugin).failed.load(Ordering::Relaxed)
}

static REOPEN: AtomicU64 = AtomicU64::new(0);

/// Asks every `file-log` file to be closed and opened again before its next write (SIGUSR1, for logrotate:
/// rename the file, send the signal, and the next records go to a new file at the configured path).
pub fn reopen_log_files() {
    REOPEN.fetch_add(1, Ordering::Release);
}

/// How many times [`reopen_log_files`] was called; a file sink reopens when this moved since its last open.
pub fn reopen_files_generation() -> u64 {
    REOPEN.load(Ordering::Acquire)
}
