//! Hostname resolution with a small per-worker cache, so DNS is not asked per request.
//!
//! Answers are kept for [`TTL`] (failures for [`NEGATIVE_TTL`]); a name with several addresses is walked
//! round-robin. The cache is a thread-local: each worker has its own and never waits on another.
//!
//! A failed lookup of a name that had addresses keeps serving the last known ones (asking again after
//! [`NEGATIVE_TTL`]): 503 "name resolution failed" only when no address was ever known, as in Kong.

use crate::error::ProxyError;
use std::cell::RefCell;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

/// How long a successful answer is used.
pub const TTL: Duration = Duration::from_secs(30);
/// How long a failed lookup is remembered.
pub const NEGATIVE_TTL: Duration = Duration::from_secs(1);

struct Entry {
    addrs: Vec<SocketAddr>,
    next: usize,
    at: Instant,
}

thread_local! {
    static CACHE: RefCell<HashMap<(String, u16), Entry>> = RefCell::new(HashMap::new());
}

fn cached(host: &str, port: u16) -> Option<Result<SocketAddr, ProxyError>> {
    CACHE.with(|c| {
        let mut c = c.borrow_mut();
        let entry = c.get_mut(&(host.to_string(), port))?;
        let ttl = if entry.addrs.is_empty() {
            NEGATIVE_TTL
        } else {
            TTL
        };
        if entry.at.elapsed() >= ttl {
            return None;
        }
        if entry.addrs.is_empty() {
            return Some(Err(ProxyError::NameResolution));
        }
        let addr = entry.addrs[entry.next % entry.addrs.len()];
        entry.next = entry.next.wrapping_add(1);
        Some(Ok(addr))
    })
}

/// An address of `host:port`, from the cache or a fresh lookup (IPv4 answers first).
pub async fn resolve(host: &str, port: u16) -> Result<SocketAddr, ProxyError> {
    if let Some(hit) = cached(host, port) {
        return hit;
    }
    let mut addrs: Vec<SocketAddr> = match tokio::net::lookup_host((host, port)).await {
        Ok(found) => found.collect(),
        Err(e) => {
            tracing::warn!(host, error = %e, "DNS resolution failed");
            Vec::new()
        }
    };
    addrs.sort_by_key(SocketAddr::is_ipv6);
    if addrs.is_empty() {
        if let Some(stale) = keep_stale(host, port) {
            return Ok(stale);
        }
    }
    let first = addrs.first().copied();
    CACHE.with(|c| {
        c.borrow_mut().insert(
            (host.to_string(), port),
            Entry {
                addrs,
                next: 1,
                at: Instant::now(),
            },
        )
    });
    first.ok_or(ProxyError::NameResolution)
}

/// The last known address of a name whose lookup just failed, kept for another [`NEGATIVE_TTL`].
fn keep_stale(host: &str, port: u16) -> Option<SocketAddr> {
    CACHE.with(|c| {
        let mut c = c.borrow_mut();
        let entry = c.get_mut(&(host.to_string(), port))?;
        let addr = *entry.addrs.get(entry.next % entry.addrs.len().max(1))?;
        entry.next = entry.next.wrapping_add(1);
        entry.at = Instant::now()
            .checked_sub(TTL.saturating_sub(NEGATIVE_TTL))
            .unwrap_or_else(Instant::now);
        tracing::warn!(host, %addr, "DNS resolution failed; using the last known address");
        Some(addr)
    })
}

#[cfg(test)]
mod tests;
