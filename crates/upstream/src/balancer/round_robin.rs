//! Weighted round-robin: nginx's smooth order (a 3:1 split interleaves a-a-b-a rather than a-a-a-b),
//! precomputed once per snapshot and walked with one atomic counter, so the split is exact across workers.

use crate::schedule::smooth_schedule;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The precomputed order over target indices.
#[derive(Debug)]
pub struct RoundRobin {
    schedule: Vec<u32>,
    next: AtomicUsize,
}

impl RoundRobin {
    /// `weights` by target index; weight 0 never appears in the order.
    pub fn new(weights: &[u32]) -> RoundRobin {
        RoundRobin {
            schedule: smooth_schedule(weights),
            next: AtomicUsize::new(0),
        }
    }

    /// The next target in the order that `usable` accepts (an unusable one passes its turn to the next).
    #[inline]
    pub fn pick(&self, usable: impl Fn(usize) -> bool) -> Option<usize> {
        let len = self.schedule.len();
        let start = match len {
            0 => return None,
            1 => 0,
            _ => self.next.fetch_add(1, Ordering::Relaxed),
        };
        (0..len)
            .map(|i| self.schedule[(start + i) % len] as usize)
            .find(|t| usable(*t))
    }
}
