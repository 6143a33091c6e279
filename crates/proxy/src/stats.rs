//! Connection and request counters for Kong's `GET /status` `server` block and its Prometheus families:
//! atomics bumped by the workers, summed on read, and the workers' runtimes, whose task counts stand in for
//! nginx's timers.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// The counters the workers bump (relaxed atomics: counts, not synchronization).
#[derive(Default)]
pub struct Counters {
    pub accepted: AtomicU64,
    pub handled: AtomicU64,
    pub active: AtomicU64,
    pub requests: AtomicU64,
    /// Connections with a request in flight (bumped when a connection's first request starts, dropped when
    /// its last one ends; see `watchdog::ConnState`).
    pub busy: AtomicU64,
    /// Each worker's runtime, registered when it starts.
    pub runtimes: std::sync::Mutex<Vec<tokio::runtime::Handle>>,
}

impl Counters {
    pub fn bump(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

/// Downstream connections by nginx's states (`connections_*` in `GET /status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionStates {
    pub active: u64,
    pub reading: u64,
    pub writing: u64,
    pub waiting: u64,
}

/// A read handle on the proxy's counters, for the status endpoint.
#[derive(Clone, Default)]
pub struct ProxyStats(pub(crate) Arc<Counters>);

impl ProxyStats {
    /// Kong's `server` object: `connections_accepted`, `connections_active`, `connections_handled`,
    /// `connections_reading`, `connections_writing`, `connections_waiting`, `total_requests`.
    pub fn to_kong_json(&self) -> serde_json::Value {
        let c = &self.0;
        let states = self.connection_states();
        serde_json::json!({
            "connections_accepted": c.accepted.load(Ordering::Relaxed),
            "connections_handled": c.handled.load(Ordering::Relaxed),
            "connections_active": states.active,
            "connections_reading": states.reading,
            "connections_writing": states.writing,
            "connections_waiting": states.waiting,
            "total_requests": c.requests.load(Ordering::Relaxed),
        })
    }

    /// nginx's connection states, as Sluice counts them: `writing` is a connection with a request in flight
    /// (from its head to the end of its response, as nginx counts it), `waiting` one without (idle
    /// keep-alive, or connected and silent). `reading` is 0: a head is read and handed on within one poll,
    /// and a connection still receiving one counts as waiting.
    pub fn connection_states(&self) -> ConnectionStates {
        let active = self.0.active.load(Ordering::Relaxed);
        let writing = self.0.busy.load(Ordering::Relaxed).min(active);
        ConnectionStates {
            active,
            reading: 0,
            writing,
            waiting: active - writing,
        }
    }

    /// The tasks of the worker runtimes, Sluice's counterpart of nginx's timers (`kong_nginx_timers`):
    /// (alive, queued to run). Background work (connections, health probes, log deliveries) runs as tasks.
    pub fn tasks(&self) -> (usize, usize) {
        let runtimes = self.0.runtimes.lock().unwrap_or_else(|e| e.into_inner());
        runtimes.iter().fold((0, 0), |(alive, queued), h| {
            let m = h.metrics();
            (alive + m.num_alive_tasks(), queued + m.global_queue_depth())
        })
    }

    /// The worker runtimes registered so far (nginx's `ngx.worker.count()`).
    pub fn workers(&self) -> usize {
        self.0.runtimes.lock().map_or(0, |r| r.len())
    }

    /// Requests received since start.
    pub fn total_requests(&self) -> u64 {
        self.0.requests.load(Ordering::Relaxed)
    }

    /// Downstream connections open now.
    pub fn active_connections(&self) -> u64 {
        self.0.active.load(Ordering::Relaxed)
    }

    /// Downstream connections accepted since start.
    pub fn accepted_connections(&self) -> u64 {
        self.0.accepted.load(Ordering::Relaxed)
    }
}
