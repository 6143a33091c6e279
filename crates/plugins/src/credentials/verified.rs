//! The `Authorization` values basic-auth verified on one snapshot, so that a client sending the same
//! credentials again is not put through the password's SHA-1 and the base64 decoding once more (~1.9k
//! instructions of every request it makes).
//!
//! The table belongs to the snapshot's [`super::Credentials`]: a new config (a changed password, a removed
//! credential) starts with an empty one, as Kong's `sha1(password .. consumer_id)` is checked against the
//! credentials of the config the request runs on. Only values that verified are kept, so a client can add
//! entries only with valid credentials; the table starts over past [`MOST`] entries. It is keyed by the
//! header's exact bytes, with a hash seeded per table, so a client cannot aim values at one bucket.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

/// Entries kept at most; the table is emptied when a value past it verifies.
const MOST: usize = 4096;

/// Header values longer than this are never kept (a few KB of table at most per entry).
const LONGEST: usize = 1024;

/// Verified header values, each with the index of its credential in the snapshot's table.
#[derive(Default)]
pub struct Verified(Mutex<HashMap<Box<[u8]>, usize, foldhash::quality::RandomState>>);

impl Verified {
    /// The credential `value` verified as, when it did on this snapshot.
    pub fn get(&self, value: &[u8]) -> Option<usize> {
        let map = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        map.get(value).copied()
    }

    /// Remembers that `value` verified as credential `index`.
    pub fn insert(&self, value: &[u8], index: usize) {
        if value.len() > LONGEST {
            return;
        }
        let mut map = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if map.len() >= MOST {
            map.clear();
        }
        map.insert(value.into(), index);
    }

    /// How many values are kept.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).len()
    }
}

#[cfg(test)]
mod tests {
    use super::{Verified, LONGEST, MOST};

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
