//! The per-worker answer cache and its rules: how long an answer is used, when it is refreshed, what a
//! failed lookup leaves behind. Pure logic over an explicit `now`, so the rules are unit-tested without
//! waiting.

use super::lookup::Outcome;
use super::settings::{DnsSettings, Kind};
use super::Addr;
use rustc_hash::FxHashMap;
use std::time::{Duration, Instant};

/// The shortest time an answer is used: a TTL of 0 would put a DNS query on every request (Kong's
/// behaviour); Sluice instead uses the answer for one second and refreshes it in the background.
pub const MIN_TTL: Duration = Duration::from_secs(1);

/// What the cache knows about one name.
#[derive(Debug)]
pub struct Entry {
    /// Empty for a name that has never resolved (a remembered failure).
    addrs: Box<[Addr]>,
    next: usize,
    /// Until when the answer (or the failure) holds.
    expires: Instant,
    /// When the running background refresh started.
    refreshing: Option<Instant>,
    /// The record type that answered (Kong's `LAST`).
    pub last: Option<Kind>,
}

/// What a request does with what the cache holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Use {
    /// Connect to this address.
    Addr(Addr),
    /// Connect to this address, and refresh the name in the background (it has expired).
    Refresh(Addr),
    /// The name is known not to resolve: 503.
    Failed,
    /// Nothing usable: look the name up now and wait for it.
    Lookup,
}

/// One worker's answers, keyed by host name (looked up by `&str`, so a hit does not allocate; the names
/// come from the config, so a fast non-keyed hash is fine).
#[derive(Debug, Default)]
pub struct Cache {
    entries: FxHashMap<Box<str>, Entry>,
}

impl Cache {
    /// What to do for a request to `host` at `now`.
    pub fn consult(&mut self, host: &str, now: Instant, settings: &DnsSettings) -> Use {
        let Some(entry) = self.entries.get_mut(host) else {
            return Use::Lookup;
        };
        if entry.addrs.is_empty() {
            return match now < entry.expires {
                true => Use::Failed,
                false => Use::Lookup,
            };
        }
        if now < entry.expires {
            return Use::Addr(entry.take());
        }
        // Expired: still used, and refreshed in the background. A refresh that has not reported back
        // within dns_stale_ttl (at least 1 s) is presumed slow or lost, and another one is started.
        let in_flight = entry.refreshing.is_some_and(|since| {
            now.saturating_duration_since(since) < settings.stale_ttl.max(MIN_TTL)
        });
        if in_flight {
            return Use::Addr(entry.take());
        }
        entry.refreshing = Some(now);
        Use::Refresh(entry.take())
    }

    /// The type that answered `host` last (Kong's `LAST`).
    pub fn last(&self, host: &str) -> Option<Kind> {
        self.entries.get(host).and_then(|e| e.last)
    }

    /// Records the outcome of a lookup of `host` made at `now`, and says what the request that made it
    /// uses. A failure keeps the addresses already known (retried after `dns_error_ttl`, or
    /// `dns_not_found_ttl` when the name is gone); only a name never resolved fails requests.
    pub fn store(
        &mut self,
        host: &str,
        outcome: Outcome,
        now: Instant,
        settings: &DnsSettings,
    ) -> Use {
        let retry_after = match &outcome {
            Outcome::Found { .. } => Duration::ZERO,
            Outcome::NotFound => settings.not_found_ttl,
            Outcome::Failed => settings.error_ttl,
        };
        if !self.entries.contains_key(host) {
            let empty = Entry {
                addrs: Box::new([]),
                next: 0,
                expires: now,
                refreshing: None,
                last: None,
            };
            self.entries.insert(host.into(), empty);
        }
        let Some(entry) = self.entries.get_mut(host) else {
            return Use::Failed;
        };
        entry.refreshing = None;
        match outcome {
            Outcome::Found { addrs, ttl, kind } => {
                let ttl = settings.valid_ttl.unwrap_or(ttl).max(MIN_TTL);
                entry.addrs = addrs.into_boxed_slice();
                entry.next = 0;
                entry.expires = now + ttl;
                entry.last = Some(kind);
                Use::Addr(entry.take())
            }
            _ if entry.addrs.is_empty() => {
                entry.expires = now + retry_after;
                Use::Failed
            }
            _ => {
                entry.expires = now + retry_after;
                tracing::warn!(
                    host,
                    "DNS resolution failed; using the last known addresses"
                );
                Use::Addr(entry.take())
            }
        }
    }

    /// Until when the answer for `host` holds (tests).
    #[cfg(test)]
    pub fn expires(&self, host: &str) -> Option<Instant> {
        self.entries.get(host).map(|e| e.expires)
    }
}

impl Entry {
    /// The next address, round-robin. Call only when `addrs` is not empty.
    fn take(&mut self) -> Addr {
        let addr = self.addrs[self.next % self.addrs.len()];
        self.next = self.next.wrapping_add(1);
        addr
    }
}
