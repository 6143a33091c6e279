//! ldap-auth's verdict cache (Kong's `kong.cache` entry per credential): whether the LDAP server accepted a
//! username and password, kept for `cache_ttl` seconds. The key is the SHA-256 of Kong's cache-key text,
//! which holds the server, the DN parts, the ttl, the username and the password, so a changed password never
//! matches an old entry. Refusals are kept too (Kong's `neg_ttl`); errors are not. One cache per worker
//! thread, read and written without a lock; it outlives config reloads, as the key carries the config.

use sha2::{Digest, Sha256};
use std::cell::RefCell;
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// Entries past this many are swept of the expired ones, then dropped all if still too many.
const MAX_ENTRIES: usize = 100_000;

pub type Key = [u8; 32];

/// When the entry stops counting (None: never, Kong's `cache_ttl` 0) and the verdict.
type Entry = (Option<Instant>, bool);

thread_local! {
    static VERDICTS: RefCell<HashMap<Key, Entry>> = RefCell::new(HashMap::new());
}

/// Kong's cache key text `host:port:base_dn:attribute:ttl:username:password`, hashed; `prefix` is the part
/// before the username, fixed per plugin instance.
pub fn key(prefix: &str, username: &str, password: &str) -> Key {
    let mut h = Sha256::new();
    h.update(prefix.as_bytes());
    h.update(username.as_bytes());
    h.update(b":");
    h.update(password.as_bytes());
    h.finalize().into()
}

/// The cached verdict for `key`, if it has not expired.
pub fn get(key: &Key) -> Option<bool> {
    VERDICTS.with_borrow(|m| {
        let (until, ok) = m.get(key)?;
        until.is_none_or(|t| Instant::now() < t).then_some(*ok)
    })
}

/// Keeps `ok` for `key` during `ttl` (None: for good).
pub fn put(key: Key, ok: bool, ttl: Option<Duration>) {
    let now = Instant::now();
    VERDICTS.with_borrow_mut(|m| {
        if m.len() >= MAX_ENTRIES {
            m.retain(|_, (until, _)| until.is_none_or(|t| now < t));
            if m.len() >= MAX_ENTRIES {
                m.clear();
            }
        }
        m.insert(key, (ttl.map(|d| now + d), ok));
    });
}
