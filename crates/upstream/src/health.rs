//! Target health, Kong-style: passive checks count outcomes of proxied requests, active checks probe
//! targets in the background ([`active`] is the compiled check, [`crate::probe`] one probe; the proxy runs
//! them). Either turns a target unhealthy or healthy again when its counter reaches the configured
//! threshold (0 disables that counter).
//!
//! Runtime state lives in a process-wide [`Registry`] keyed by (upstream name, target `host:port`), not in
//! the snapshot: a reload that keeps a target keeps its health, counters, in-flight count and latency, so
//! a target that was down stays down and traffic does not burst onto it (Kong #8976).

pub mod active;
mod state;

pub use state::{Failure, InFlight, TargetState};

use sluice_model::{Healthchecks, HealthyRule, UnhealthyRule};
use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex, Weak};

/// HTTP statuses 0..1024 as a bit set.
#[derive(Debug, Clone, Default)]
struct StatusSet([u64; 16]);

impl StatusSet {
    fn of(statuses: &[u16]) -> StatusSet {
        let mut set = StatusSet::default();
        for s in statuses.iter().filter(|s| **s < 1024) {
            set.0[usize::from(*s / 64)] |= 1 << (s % 64);
        }
        set
    }

    fn contains(&self, status: u16) -> bool {
        status < 1024 && self.0[usize::from(status / 64)] & (1 << (status % 64)) != 0
    }
}

/// The thresholds and status lists of one check (active or passive).
#[derive(Debug, Clone, Default)]
pub struct Rules {
    healthy_statuses: StatusSet,
    successes: u32,
    unhealthy_statuses: StatusSet,
    http_failures: u32,
    tcp_failures: u32,
    timeouts: u32,
}

impl Rules {
    /// Kong's `healthy` and `unhealthy` records of one check.
    pub fn new(healthy: &HealthyRule, unhealthy: &UnhealthyRule) -> Rules {
        Rules {
            healthy_statuses: StatusSet::of(&healthy.http_statuses),
            successes: healthy.successes,
            unhealthy_statuses: StatusSet::of(&unhealthy.http_statuses),
            http_failures: unhealthy.http_failures,
            tcp_failures: unhealthy.tcp_failures,
            timeouts: unhealthy.timeouts,
        }
    }

    /// Whether any counter of this check can change a target's health.
    pub fn enabled(&self) -> bool {
        self.successes + self.http_failures + self.tcp_failures + self.timeouts > 0
    }

    /// Counts a response status (statuses in neither list count for nothing). Returns the new health
    /// when it changed.
    pub fn report_status(&self, state: &TargetState, status: u16) -> Option<bool> {
        if self.unhealthy_statuses.contains(status) {
            return self.report_failure(state, Failure::Http);
        }
        if self.healthy_statuses.contains(status) {
            return self.report_success(state);
        }
        None
    }

    /// Counts a success that has no status (a TCP probe that connected).
    pub fn report_success(&self, state: &TargetState) -> Option<bool> {
        state.report_success(self.successes).then_some(true)
    }

    /// Counts a failure of `kind`.
    pub fn report_failure(&self, state: &TargetState, kind: Failure) -> Option<bool> {
        let threshold = match kind {
            Failure::Http => self.http_failures,
            Failure::Tcp => self.tcp_failures,
            Failure::Timeout => self.timeouts,
        };
        state.report_failure(kind, threshold).then_some(false)
    }
}

/// An upstream's compiled checks.
#[derive(Debug, Clone, Default)]
pub struct Checks {
    pub passive: Rules,
    /// Whether the passive check can change health (else outcomes are not counted at all).
    pub passive_on: bool,
    /// None when active checks are off (both intervals 0).
    pub active: Option<active::Spec>,
}

impl Checks {
    /// Compiles Kong's `healthchecks` record.
    pub fn new(h: &Healthchecks) -> Checks {
        let passive = Rules::new(&h.passive.healthy, &h.passive.unhealthy);
        Checks {
            passive_on: passive.enabled(),
            passive,
            active: active::Spec::new(&h.active),
        }
    }

    /// Whether any check is on (else Kong reports `HEALTHCHECKS_OFF`).
    pub fn enabled(&self) -> bool {
        self.passive_on || self.active.is_some()
    }
}

/// The process-wide target states, held weakly: a state lives as long as some snapshot has its target.
#[derive(Debug, Default)]
pub struct Registry {
    inner: Mutex<Entries>,
}

#[derive(Debug, Default)]
struct Entries {
    targets: HashMap<(String, String), Weak<TargetState>>,
    /// Size at which released entries are swept next.
    sweep_at: usize,
}

static REGISTRY: LazyLock<Registry> = LazyLock::new(Registry::default);

impl Registry {
    /// The one registry of this process (health is a property of the target, not of a snapshot).
    pub fn global() -> &'static Registry {
        &REGISTRY
    }

    /// The state of `target` in `upstream`: the existing one when a live snapshot has it, else a new
    /// healthy one. Called while compiling a snapshot, never per request.
    pub fn state(&self, upstream: &str, target: &str) -> Arc<TargetState> {
        let mut map = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let key = (upstream.to_ascii_lowercase(), target.to_ascii_lowercase());
        if let Some(found) = map.targets.get(&key).and_then(Weak::upgrade) {
            return found;
        }
        // Forget released states now and then (amortized: when the map has doubled since the last sweep).
        if map.targets.len() >= map.sweep_at {
            map.targets.retain(|_, w| w.strong_count() > 0);
            map.sweep_at = (map.targets.len() * 2).max(64);
        }
        let state = Arc::new(TargetState::default());
        map.targets.insert(key, Arc::downgrade(&state));
        state
    }
}

#[cfg(test)]
mod tests;
