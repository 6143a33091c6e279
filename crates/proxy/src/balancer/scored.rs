//! Least-connections and latency: the usable target with the lowest cost wins; ties are broken from a
//! rotating start so equal targets share the load.
//!
//! least-connections costs `(in flight + 1) / weight`; latency (peak EWMA) costs
//! `average response time × (in flight + 1) / weight`, and a target without a sample yet costs 0 so it
//! gets one.

use crate::health::TargetState;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Which cost to minimise.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cost {
    LeastConnections,
    Latency,
}

/// Picks by cost among `targets` (weight, state) by index.
#[derive(Debug)]
pub struct Scored {
    cost: Cost,
    next: AtomicUsize,
}

impl Scored {
    pub fn new(cost: Cost) -> Scored {
        Scored {
            cost,
            next: AtomicUsize::new(0),
        }
    }

    /// The cheapest target `usable` accepts.
    pub fn pick<'a>(
        &self,
        targets: impl ExactSizeIterator<Item = (u32, &'a TargetState)> + Clone,
        usable: impl Fn(usize) -> bool,
    ) -> Option<usize> {
        let len = targets.len();
        if len == 0 {
            return None;
        }
        let start = self.next.fetch_add(1, Ordering::Relaxed) % len;
        let mut best: Option<(f64, usize)> = None;
        for (i, (weight, state)) in targets.clone().enumerate().cycle().skip(start).take(len) {
            if weight == 0 || !usable(i) {
                continue;
            }
            let load = f64::from(state.inflight()) + 1.0;
            let cost = match self.cost {
                Cost::LeastConnections => load,
                Cost::Latency => state.ewma_us() as f64 * load,
            } / f64::from(weight);
            if best.is_none_or(|(b, _)| cost < b) {
                best = Some((cost, i));
            }
        }
        best.map(|(_, i)| i)
    }
}
