//! Kong's hash of a group from the kept serialized bytes of its entities, so that a node holding a large
//! config rehashes a group after a one-entity change by serializing that entity alone and feeding the
//! others' kept bytes to MD5. Used by a hybrid CP and DP for each delta (`hybrid/rehash.rs` in the
//! binary).
//!
//! The catch is Kong's 1 MB folding: before each value is serialized, a buffer of more than 1,000,000
//! bytes is replaced by its MD5, so where the folds fall depends on every byte before. An entity is
//! therefore kept unfolded, serialized as if from an empty buffer, with the offsets inside its bytes
//! where a value starts (where Kong checks the limit), and [`array_hash`] replays Kong's checks over the
//! kept bytes: the result is byte for byte [`super::value_hash`] of the whole array.

use super::{hex, Sorted, FOLD_AT};
use md5::{Digest, Md5};
use serde_json::Value;

/// One value's sorted string, serialized on its own and never folded, with the offsets where Kong checks
/// the fold limit (the starts of the value and of every value inside it, ascending, each once).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Serialized {
    bytes: Box<[u8]>,
    checks: Box<[u32]>,
}

impl Serialized {
    /// Serializes `value` as Kong's `to_sorted_string` would from an empty buffer, recording the checks.
    pub fn of(value: &Value) -> Serialized {
        let mut s = Sorted {
            checks: Some(Vec::new()),
            ..Sorted::default()
        };
        s.write(value);
        Serialized {
            bytes: s.buf.into(),
            checks: s.checks.unwrap_or_default().into(),
        }
    }

    /// The heap memory it holds, in bytes.
    pub fn heap_size(&self) -> usize {
        self.bytes.len() + self.checks.len() * std::mem::size_of::<u32>()
    }
}

/// Kong's hash of an array (a config group) whose items are `items`: equal to [`super::value_hash`] of
/// the array, folds included, without serializing any item again.
pub fn array_hash<'a>(items: impl ExactSizeIterator<Item = &'a Serialized>) -> String {
    let mut replay = Replay::default();
    // The array's own check, at offset 0, never folds.
    let count = items.len();
    if count == 0 {
        replay.raw(b"{}");
    }
    for (i, item) in items.enumerate() {
        // Kong joins 1 to 5 items with `;` and ends each of 6 or more with `;`.
        if count <= 5 && i > 0 {
            replay.raw(b";");
        }
        replay.value(item);
        if count > 5 {
            replay.raw(b";");
        }
    }
    hex(&replay.md5.finalize())
}

/// MD5 over Kong's buffer as it would be filled: `len` is the buffer's length since the last fold.
#[derive(Default)]
struct Replay {
    md5: Md5,
    len: usize,
}

impl Replay {
    fn raw(&mut self, bytes: &[u8]) {
        self.md5.update(bytes);
        self.len += bytes.len();
    }

    /// Feeds a kept value, folding at each of its checks where Kong's buffer would be over the limit:
    /// between two folds the buffer only grows, so the next fold is at the first check past the point
    /// where it exceeds 1,000,000 bytes (a binary search), and every check before it is skipped.
    fn value(&mut self, value: &Serialized) {
        let (mut fed, mut next) = (0, 0);
        loop {
            let pending = &value.checks[next..];
            let first = if self.len > FOLD_AT {
                0
            } else {
                let limit = fed + (FOLD_AT - self.len);
                pending.partition_point(|&c| c as usize <= limit)
            };
            let Some(&at) = pending.get(first) else { break };
            let at = at as usize;
            self.raw(&value.bytes[fed..at]);
            self.fold();
            fed = at;
            next += first + 1;
        }
        self.raw(&value.bytes[fed..]);
    }

    /// Kong's fold: the buffer becomes its raw 16-byte MD5.
    fn fold(&mut self) {
        let digest = self.md5.finalize_reset();
        self.md5.update(digest);
        self.len = digest.len();
    }
}

#[cfg(test)]
mod tests;
