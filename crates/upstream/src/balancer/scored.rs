//! Least-connections and latency: the usable target with the lowest cost wins; ties are broken from a
//! rotating start so equal targets share the load.
//!
//! least-connections costs `(in flight + 1) / weight` and takes the cheapest of all usable targets.
//! latency (peak EWMA) costs `average response time × (in flight + 1) / weight` and takes the cheaper of
//! two targets drawn at random ("power of two choices"): the slowest target never wins, while targets
//! of similar speed share the traffic instead of one taking it all on a lucky sample. A target without a
//! sample costs 0 so it gets one, and an average fades while it is not refreshed.

use super::ring::mix;
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
        let turn = self.next.fetch_add(1, Ordering::Relaxed);
        let candidates = targets
            .enumerate()
            .filter(|(i, (w, _))| *w > 0 && usable(*i));
        match self.cost {
            Cost::LeastConnections => {
                // The cheapest; ties go to the first after a rotating start.
                let n = candidates.clone().count();
                let start = if n == 0 { 0 } else { turn % n };
                let rotated = candidates.clone().skip(start).chain(candidates.take(start));
                cheapest(rotated, |s| f64::from(s.inflight()) + 1.0)
            }
            Cost::Latency => {
                let n = candidates.clone().count();
                if n <= 1 {
                    return candidates.map(|(i, _)| i).next();
                }
                let r = mix(turn as u64);
                let a = (r % n as u64) as usize;
                let b = (a + 1 + ((r >> 32) % (n as u64 - 1)) as usize) % n;
                let two = candidates.enumerate().filter(|(k, _)| *k == a || *k == b);
                cheapest(two.map(|(_, c)| c), |s| {
                    s.latency_cost() * (f64::from(s.inflight()) + 1.0)
                })
            }
        }
    }
}

/// The target with the lowest `load / weight` (the first of equals).
fn cheapest<'a>(
    targets: impl Iterator<Item = (usize, (u32, &'a TargetState))>,
    load: impl Fn(&TargetState) -> f64,
) -> Option<usize> {
    let mut best: Option<(f64, usize)> = None;
    for (i, (weight, state)) in targets {
        let cost = load(state) / f64::from(weight);
        if best.is_none_or(|(b, _)| cost < b) {
            best = Some((cost, i));
        }
    }
    best.map(|(_, i)| i)
}
