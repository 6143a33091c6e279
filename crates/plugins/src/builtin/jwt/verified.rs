//! The tokens one jwt plugin verified on one snapshot, so that a client sending the same token again is
//! not put through its base64 and JSON decoding and its signature check once more (~12k instructions of
//! every HS256 request under callgrind), as basic-auth keeps the `Authorization` values it verified
//! (`crate::credentials`).
//!
//! What a token verifies as depends only on its text, the plugin's config (`key_claim_name`,
//! `secret_is_base64`) and the snapshot's credentials, so an entry belongs to one plugin and one
//! [`crate::Credentials`]: a new config (a changed secret, a removed credential) starts with an empty table.
//! The time claims (`exp`, `nbf`) are kept and checked on every request, as are the credential's consumer
//! and everything after. Only tokens whose signature verified are kept, so a client adds entries only with
//! valid tokens; the table starts over past [`MOST`] entries. It is keyed by the token's exact bytes, with
//! a hash seeded per worker. Each worker keeps its own entries: no lock on the request path.

use super::token::Times;
use crate::credentials::PerWorker;
use crate::owner_id::OwnerId;
use std::cell::RefCell;

/// Entries kept at most (per worker); the table is emptied when a token past it verifies.
const MOST: usize = 4096;

/// Tokens longer than this are never kept (a few KB of table at most per entry).
const LONGEST: usize = 4096;

/// One plugin's table of verified tokens; the entries live in each worker thread's map ([`KEPT`]).
#[derive(Default)]
pub struct VerifiedTokens {
    id: OwnerId,
}

/// A verified token: the key its credential is found by, and its time claims.
struct Entry {
    key: Box<str>,
    times: Times,
}

thread_local! {
    /// A worker's verified tokens, for one plugin and credentials snapshot at a time; made on the first
    /// (a `const` initializer: no lazy-init check per access).
    static KEPT: RefCell<Option<PerWorker<(OwnerId, OwnerId), Entry>>> = const { RefCell::new(None) };
}

impl VerifiedTokens {
    /// What `found` makes of the key and time claims `token` verified with on the snapshot `credentials`
    /// (on this worker), if it did.
    pub fn get<T>(
        &self,
        credentials: OwnerId,
        token: &str,
        found: impl FnOnce(&str, Times) -> Option<T>,
    ) -> Option<T> {
        KEPT.with_borrow(|kept| {
            let entry = PerWorker::get(kept, (self.id, credentials), token.as_bytes())?;
            found(&entry.key, entry.times)
        })
    }

    /// Remembers that `token` verified on the snapshot `credentials` as the credential of `key`. A worker's
    /// map that held another plugin's or snapshot's tokens starts over.
    pub fn insert(&self, credentials: OwnerId, token: &str, key: &str, times: Times) {
        // Checked before the key is copied into its entry.
        if token.len() > LONGEST {
            return;
        }
        let entry = Entry {
            key: key.into(),
            times,
        };
        let owner = (self.id, credentials);
        KEPT.with_borrow_mut(|kept| {
            PerWorker::insert(kept, owner, token.as_bytes(), entry, (MOST, LONGEST))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::{OwnerId, Times, VerifiedTokens, LONGEST};

    #[test]
    fn a_token_is_found_only_by_its_plugin_on_its_snapshot() {
        let (plugin, other) = (VerifiedTokens::default(), VerifiedTokens::default());
        let (snapshot, newer) = (OwnerId::default(), OwnerId::default());
        let times = Times {
            exp: Some(5.0),
            nbf: None,
        };
        plugin.insert(snapshot, "a.b.c", "k", times);
        let found = |p: &VerifiedTokens, s, t| p.get(s, t, |k, t| Some((k.to_string(), t)));
        assert_eq!(found(&plugin, snapshot, "a.b.c"), Some(("k".into(), times)));
        assert_eq!(found(&plugin, snapshot, "a.b.C"), None);
        assert_eq!(found(&plugin, newer, "a.b.c"), None);
        assert_eq!(found(&other, snapshot, "a.b.c"), None);
        other.insert(snapshot, "x.y.z", "k", times);
        assert_eq!(
            found(&plugin, snapshot, "a.b.c"),
            None,
            "one table at a time"
        );
        let long = "a".repeat(LONGEST + 1);
        plugin.insert(snapshot, &long, "k", times);
        assert_eq!(found(&plugin, snapshot, &long), None);
    }
}
