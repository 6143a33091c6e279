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
    /// Sluice's digest of the bytes ([`crate::digest::item`]), made once with them.
    digest: u128,
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
            digest: crate::digest::item(&s.buf),
            bytes: s.buf.into(),
            checks: s.checks.unwrap_or_default().into(),
        }
    }

    /// Sluice's digest of the bytes, for a group's [`crate::digest::GroupSum`].
    pub fn digest(&self) -> u128 {
        self.digest
    }

    /// The heap memory it holds, in bytes.
    pub fn heap_size(&self) -> usize {
        self.bytes.len() + self.checks.len() * std::mem::size_of::<u32>()
    }
}

/// Kong's hash of an array (a config group) whose items are `items`: equal to [`super::value_hash`] of
/// the array, folds included, without serializing any item again.
pub fn array_hash<'a>(items: impl ExactSizeIterator<Item = &'a Serialized>) -> String {
    Marked::of(items, None).hash
}

/// Items between two kept MD5 states of a [`Marked`] array hash.
const MARK_EVERY: usize = 64;

/// Kong's hash of an array, with the MD5 state kept before every [`MARK_EVERY`]th item. The hash of the
/// array after a change (of a DP's or CP's routes on each delta) then resumes from the last state
/// before the first item that changed instead of feeding every item again: everything after a change
/// is fed again (the fold points after it move), everything before it is not. A few KB for 10,000
/// items (one state is about 100 bytes).
#[derive(Clone, Default)]
pub struct Marked {
    hash: String,
    /// (item index, the replay before that item), ascending; only for arrays of more than 5 items
    /// (up to 5 are joined, not terminated, with `;`: a state depends on the count).
    marks: Vec<(usize, Replay)>,
}

impl Marked {
    /// The array hash of `items`. With `previous`, the hash of an array whose first `same` items are
    /// `items`' first `same` (the same bytes), it resumes from its last state at or before `same`.
    pub fn of<'a>(
        items: impl ExactSizeIterator<Item = &'a Serialized>,
        previous: Option<(&Marked, usize)>,
    ) -> Marked {
        let count = items.len();
        let resumed = previous.filter(|_| count > 5).and_then(|(p, same)| {
            let kept = p.marks.partition_point(|(at, _)| *at <= same.min(count));
            (kept > 0).then(|| p.marks[..kept].to_vec())
        });
        let mut marks = resumed.unwrap_or_default();
        let (start, mut replay) = marks
            .last()
            .map_or((0, Replay::default()), |(at, r)| (*at, r.clone()));
        if count == 0 {
            replay.raw(b"{}");
        }
        for (i, item) in items.enumerate().skip(start) {
            // Kong joins 1 to 5 items with `;` and ends each of 6 or more with `;`.
            if count <= 5 && i > 0 {
                replay.raw(b";");
            }
            if count > 5 && i % MARK_EVERY == 0 && marks.last().is_none_or(|(at, _)| *at != i) {
                marks.push((i, replay.clone()));
            }
            replay.value(item);
            if count > 5 {
                replay.raw(b";");
            }
        }
        Marked {
            hash: hex(&replay.md5.finalize()),
            marks,
        }
    }

    /// Kong's hash of the array.
    pub fn hash(&self) -> &str {
        &self.hash
    }

    /// The heap memory of the kept states, in bytes.
    pub fn heap_size(&self) -> usize {
        self.marks.capacity() * std::mem::size_of::<(usize, Replay)>() + self.hash.capacity()
    }
}

/// MD5 over Kong's buffer as it would be filled: `len` is the buffer's length since the last fold.
#[derive(Default, Clone)]
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
