//! Sorted bulk writes for [`Store::replace_all`](crate::Store::replace_all).
//!
//! A whole-config replace writes every database from empty. Putting keys in the order records come
//! (kinds interleaved, ids random) makes LMDB search and split pages for every put and leaves pages
//! about half full; collecting each database's entries, sorting them by key and appending them
//! (`MDB_APPEND`) fills pages completely and skips the search: fewer pages written and synced, and
//! fewer map pages the process touches.

use heed::types::Bytes;
use heed::{Database, PutFlags, RwTxn};
use std::ops::Range;

/// One database's entries: keys and values packed in one buffer, sorted before they are written.
#[derive(Default)]
pub(crate) struct Batch {
    bytes: Vec<u8>,
    /// (key range, value range) into `bytes`.
    entries: Vec<(Range<usize>, Range<usize>)>,
}

impl Batch {
    /// A batch with room for about `entries` entries of `bytes_each` bytes.
    pub(crate) fn with_capacity(entries: usize, bytes_each: usize) -> Batch {
        Batch {
            bytes: Vec::with_capacity(entries * bytes_each),
            entries: Vec::with_capacity(entries),
        }
    }

    /// Adds an entry whose key is `parts` joined with NUL separators (the store's key scheme, [`crate::append_key`]).
    pub(crate) fn push(&mut self, parts: &[&[u8]], value: &[u8]) {
        let start = self.bytes.len();
        crate::append_key(&mut self.bytes, parts);
        let key = start..self.bytes.len();
        self.bytes.extend_from_slice(value);
        self.entries.push((key.clone(), key.end..self.bytes.len()));
    }

    /// The key of the entry just pushed (for callers that record it elsewhere too).
    pub(crate) fn last_key(&self) -> &[u8] {
        self.entries
            .last()
            .map_or(&[][..], |(k, _)| &self.bytes[k.clone()])
    }

    /// Writes every entry into `db` (which must be empty) in key order. When a key was pushed more
    /// than once the last value wins, as with one `put` per entry.
    pub(crate) fn write(
        mut self,
        wtxn: &mut RwTxn<'_>,
        db: &Database<Bytes, Bytes>,
    ) -> heed::Result<()> {
        let bytes = &self.bytes;
        // Stable, so equal keys keep their push order and the last one is written.
        self.entries
            .sort_by(|a, b| bytes[a.0.clone()].cmp(&bytes[b.0.clone()]));
        let mut entries = self.entries.iter().peekable();
        while let Some((k, v)) = entries.next() {
            let key = &bytes[k.clone()];
            if entries
                .peek()
                .is_some_and(|(next, _)| &bytes[next.clone()] == key)
            {
                continue;
            }
            db.put_with_flags(wtxn, PutFlags::APPEND, key, &bytes[v.clone()])?;
        }
        Ok(())
    }
}
