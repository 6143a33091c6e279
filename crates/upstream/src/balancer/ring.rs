//! Consistent hashing: a ring of `slots` entries, each owned by one target, so a request's hash value
//! always lands on the same target while the targets stay the same.
//!
//! Each slot goes to the target with the highest weighted rendezvous score for that slot (score =
//! `weight / -ln(u)` with `u` a uniform hash of target name and slot). A target owns a share of the slots
//! proportional to its weight, and the owner of a slot depends only on the targets that compete for it:
//! removing a target remaps exactly the slots it owned, adding one takes only the slots it now wins, and the
//! rest of the ring does not move. An unusable target's slots fall through to the next usable slot.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock, Mutex, Weak};

/// The ring: slot → target index.
#[derive(Debug)]
pub struct Ring {
    slots: Vec<u32>,
    next: AtomicUsize,
}

impl Ring {
    /// `targets` as (name, weight) by target index; weight 0 owns no slot. Costs `slots × targets` hashes,
    /// paid once per snapshot on the loader's thread.
    pub fn new(targets: &[(&str, u32)], slots: usize) -> Ring {
        let live: Vec<(usize, u64, f64)> = targets
            .iter()
            .enumerate()
            .filter(|(_, (_, w))| *w > 0)
            .map(|(i, (name, w))| (i, hash64(name.as_bytes()), f64::from(*w)))
            .collect();
        let owners = if live.is_empty() {
            Vec::new()
        } else {
            (0..slots.max(1) as u64)
                .map(|slot| {
                    let mut best = (f64::MIN, 0);
                    for (i, h, w) in &live {
                        let u = unit(mix(h ^ slot.wrapping_mul(0x9E37_79B9_7F4A_7C15)));
                        let score = w / -u.ln();
                        if score > best.0 {
                            best = (score, *i as u32);
                        }
                    }
                    best.1
                })
                .collect()
        };
        Ring {
            slots: owners,
            next: AtomicUsize::new(0),
        }
    }

    /// The ring of `targets` and `slots`, shared with any live snapshot that has the same targets, weights
    /// and slots: a reload that leaves an upstream's targets alone does not rebuild its ring.
    pub fn shared(targets: &[(&str, u32)], slots: usize) -> Arc<Ring> {
        type Key = (usize, Vec<(String, u32)>);
        static RINGS: LazyLock<Mutex<HashMap<Key, Weak<Ring>>>> = LazyLock::new(Default::default);
        let key: Key = (
            slots,
            targets.iter().map(|(n, w)| (n.to_string(), *w)).collect(),
        );
        let mut rings = RINGS.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(ring) = rings.get(&key).and_then(Weak::upgrade) {
            return ring;
        }
        rings.retain(|_, w| w.strong_count() > 0);
        let ring = Arc::new(Ring::new(targets, slots));
        rings.insert(key, Arc::downgrade(&ring));
        ring
    }

    /// The target owning the slot of `key` (or the next usable slot after it); without a key, the ring is
    /// walked in turn (weighted round-robin by slot ownership).
    pub fn pick(&self, key: Option<u64>, usable: impl Fn(usize) -> bool) -> Option<usize> {
        let len = self.slots.len();
        if len == 0 {
            return None;
        }
        let start = match key {
            Some(k) => (k % len as u64) as usize,
            None => self.next.fetch_add(1, Ordering::Relaxed),
        };
        (0..len)
            .map(|i| self.slots[(start + i) % len] as usize)
            .find(|t| usable(*t))
    }

    /// Slot owners, by slot (for tests and diagnostics).
    #[cfg(test)]
    pub fn owners(&self) -> &[u32] {
        &self.slots
    }
}

/// A stable 64-bit hash (FNV-1a folded through a mixer): the same value in every process and build, so
/// gateways running the same config send a key to the same target.
pub fn hash64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    mix(h)
}

/// splitmix64's finalizer.
pub(super) fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A hash as a number in (0, 1).
fn unit(h: u64) -> f64 {
    ((h >> 11) as f64 + 0.5) / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests;
