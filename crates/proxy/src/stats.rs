//! Connection and request counters for Kong's `GET /status` `server` block: atomics bumped by the
//! workers, summed on read.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// The counters the workers bump (relaxed atomics: counts, not synchronization).
#[derive(Default)]
pub struct Counters {
    pub accepted: AtomicU64,
    pub handled: AtomicU64,
    pub active: AtomicU64,
    pub requests: AtomicU64,
}

impl Counters {
    pub fn bump(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

/// A read handle on the proxy's counters, for the status endpoint.
#[derive(Clone, Default)]
pub struct ProxyStats(pub(crate) Arc<Counters>);

impl ProxyStats {
    /// Kong's `server` object: `connections_accepted`, `connections_active`, `connections_handled`,
    /// `connections_reading`, `connections_writing`, `connections_waiting`, `total_requests`.
    pub fn to_kong_json(&self) -> serde_json::Value {
        let c = &self.0;
        let active = c.active.load(Ordering::Relaxed);
        serde_json::json!({
            "connections_accepted": c.accepted.load(Ordering::Relaxed),
            "connections_handled": c.handled.load(Ordering::Relaxed),
            "connections_active": active,
            "connections_reading": 0,
            "connections_writing": active,
            "connections_waiting": 0,
            "total_requests": c.requests.load(Ordering::Relaxed),
        })
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
