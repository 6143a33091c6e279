//! Weighted round-robin: nginx's smooth order (a 3:1 split interleaves a-a-b-a rather than a-a-a-b),
//! precomputed once per snapshot and walked with one atomic counter, so the split is exact across workers.

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

fn gcd(a: u32, b: u32) -> u32 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// nginx's smooth weighted round-robin, unrolled for one full cycle (weights reduced by their gcd, and
/// scaled down when a cycle would be longer than 10,000 picks). Returns target indices. Also orders the
/// addresses of weighted SRV answers ([`crate::dns`]).
pub(crate) fn smooth_schedule(weights: &[u32]) -> Vec<u32> {
    let g = weights.iter().copied().fold(0, gcd).max(1);
    let mut w: Vec<i64> = weights.iter().map(|x| (*x / g) as i64).collect();
    let total: i64 = w.iter().sum();
    if total == 0 {
        return Vec::new();
    }
    if total > 10_000 {
        let scale = total as f64 / 10_000.0;
        w = w
            .iter()
            .map(|x| match *x {
                0 => 0,
                x => ((x as f64 / scale).round() as i64).max(1),
            })
            .collect();
    }
    let total: i64 = w.iter().sum();
    let mut current = vec![0i64; w.len()];
    let mut out = Vec::with_capacity(total as usize);
    for _ in 0..total {
        for (c, wi) in current.iter_mut().zip(&w) {
            *c += wi;
        }
        let mut best = 0;
        for (i, c) in current.iter().enumerate() {
            if *c > current[best] {
                best = i;
            }
        }
        current[best] -= total;
        out.push(best as u32);
    }
    out
}
