//! The `Authorization` values basic-auth verified on one snapshot, so that a client sending the same
//! credentials again is not put through the password's SHA-1 and the base64 decoding once more (~1.9k
//! instructions of every request it makes).
//!
//! The table belongs to the snapshot's [`super::Credentials`]: a new config (a changed password, a removed
//! credential) starts with an empty one, as Kong's `sha1(password .. consumer_id)` is checked against the
//! credentials of the config the request runs on. Only values that verified are kept, so a client can add
//! entries only with valid credentials; the table starts over past [`MOST`] entries. It is keyed by the
//! header's exact bytes, with a hash seeded per worker, so a client cannot aim values at one bucket. Each
//! worker keeps its own entries: no lock on the request path.

use crate::owner_id::OwnerId;
use std::cell::RefCell;
use std::collections::HashMap;

/// Entries kept at most (per worker); the table is emptied when a value past it verifies.
const MOST: usize = 4096;

/// Header values longer than this are never kept (a few KB of table at most per entry).
const LONGEST: usize = 1024;

/// A worker's table of verified values, keyed by their exact bytes with a hash seeded per worker, for one
/// owner at a time (a snapshot's credentials, or a plugin on a snapshot): asked for another owner's
/// entries, it has none, and storing for another owner starts it over. Bounded: past `most` entries it
/// starts over, and keys longer than `longest` are never kept. Shared by basic-auth's table (here) and
/// jwt's (`builtin::jwt::verified`); each keeps one in a `thread_local`, so no lock is on the request path.
pub(crate) struct PerWorker<O, V> {
    owner: O,
    values: HashMap<Box<[u8]>, V, foldhash::quality::RandomState>,
}

impl<O: Copy + PartialEq, V> PerWorker<O, V> {
    /// The value `key` was kept with for `owner`, in the worker's table `slot`.
    pub fn get<'a>(slot: &'a Option<Self>, owner: O, key: &[u8]) -> Option<&'a V> {
        match slot {
            Some(table) if table.owner == owner => table.values.get(key),
            _ => None,
        }
    }

    /// Keeps `value` under `key` for `owner` in the worker's table `slot` (made on first use).
    pub fn insert(slot: &mut Option<Self>, owner: O, key: &[u8], value: V, limits: (usize, usize)) {
        let (most, longest) = limits;
        if key.len() > longest {
            return;
        }
        let table = slot.get_or_insert_with(|| PerWorker {
            owner,
            values: HashMap::default(),
        });
        if table.owner != owner || table.values.len() >= most {
            table.values.clear();
            table.owner = owner;
        }
        table.values.insert(key.into(), value);
    }

    /// How many values the table keeps for `owner`.
    #[cfg(test)]
    pub fn len(slot: &Option<Self>, owner: O) -> usize {
        slot.as_ref()
            .filter(|t| t.owner == owner)
            .map_or(0, |t| t.values.len())
    }
}

/// One snapshot's table of verified header values. The entries live in each worker thread's own map
/// ([`KEPT`]), not behind a lock the workers share: every authenticated request reads it. Each table has
/// an id of its own, never reused, and a worker's map holds the entries of one table at a time, so a
/// value verified on an older snapshot is never found on a newer one.
#[derive(Default)]
pub struct Verified {
    id: OwnerId,
}

thread_local! {
    /// Each value with its credential's index; made on a worker's first verified value (a `const`
    /// initializer: no lazy-init check per access).
    static KEPT: RefCell<Option<PerWorker<OwnerId, usize>>> = const { RefCell::new(None) };
}

impl Verified {
    /// The credential `value` verified as, when it did on this snapshot (on this worker).
    pub fn get(&self, value: &[u8]) -> Option<usize> {
        KEPT.with_borrow(|kept| PerWorker::get(kept, self.id, value).copied())
    }

    /// Remembers that `value` verified as credential `index`. A worker's map that held another
    /// snapshot's values (a reload, or requests of two snapshots in turn) starts over.
    pub fn insert(&self, value: &[u8], index: usize) {
        KEPT.with_borrow_mut(|kept| PerWorker::insert(kept, self.id, value, index, (MOST, LONGEST)))
    }

    /// How many values this worker keeps for this table.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        KEPT.with_borrow(|kept| PerWorker::len(kept, self.id))
    }
}

#[cfg(test)]
mod tests {
    use super::{Verified, LONGEST, MOST};

    #[test]
    fn another_tables_values_are_not_found() {
        let (old, new) = (Verified::default(), Verified::default());
        old.insert(b"Basic YzA6cHctMA==", 3);
        assert_eq!(new.get(b"Basic YzA6cHctMA=="), None);
        new.insert(b"Basic YzE6cHctMQ==", 4);
        assert_eq!(
            old.get(b"Basic YzA6cHctMA=="),
            None,
            "one table's values at a time"
        );
        assert_eq!(new.get(b"Basic YzE6cHctMQ=="), Some(4));
    }

    #[test]
    fn a_value_is_found_only_as_it_was_kept_and_the_table_stays_bounded() {
        let v = Verified::default();
        v.insert(b"Basic YzA6cHctMA==", 3);
        assert_eq!(v.get(b"Basic YzA6cHctMA=="), Some(3));
        assert_eq!(v.get(b"Basic YzA6cHctMA= "), None);
        assert_eq!(v.get(b"basic YzA6cHctMA=="), None);
        v.insert(&[b'a'; LONGEST + 1], 1);
        assert_eq!(v.get(&[b'a'; LONGEST + 1]), None);
        for i in 0..MOST + 10 {
            v.insert(format!("Basic {i}").as_bytes(), i);
        }
        assert!(v.len() <= MOST);
    }
}
