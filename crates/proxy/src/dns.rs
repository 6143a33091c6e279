//! Hostname resolution with a small per-worker cache, so DNS is not asked per request.
//!
//! Answers are kept for [`TTL`] (failures for [`NEGATIVE_TTL`]); a name with several addresses is walked
//! round-robin. The cache is a thread-local: each worker has its own and never waits on another.
//!
//! A known name is looked up again in the background [`REFRESH_AHEAD`] before its answer expires, so once
//! a name has resolved no request waits for DNS. A failed lookup of a name that had addresses keeps serving
//! the last known ones (asking again after [`NEGATIVE_TTL`]): 503 "name resolution failed" only when no
//! address was ever known, as in Kong.

use crate::error::ProxyError;
use std::cell::RefCell;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

/// How long a successful answer is used.
pub const TTL: Duration = Duration::from_secs(30);
/// How long a failed lookup is remembered.
pub const NEGATIVE_TTL: Duration = Duration::from_secs(1);
/// How long before expiry a used answer is refreshed in the background.
pub const REFRESH_AHEAD: Duration = Duration::from_secs(5);

struct Entry {
    addrs: Vec<SocketAddr>,
    next: usize,
    at: Instant,
    /// A background refresh was started for this answer.
    refreshing: bool,
}

/// A cache answer.
#[derive(Debug, PartialEq, Eq)]
enum Hit {
    /// Use this (an address, or a remembered failure).
    Fresh(Result<SocketAddr, ProxyError>),
    /// Use this address, and refresh the name in the background: it expires soon.
    Refresh(SocketAddr),
}

thread_local! {
    static CACHE: RefCell<HashMap<(String, u16), Entry>> = RefCell::new(HashMap::new());
}

fn cached(host: &str, port: u16) -> Option<Hit> {
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
            return Some(Hit::Fresh(Err(ProxyError::NameResolution)));
        }
        let addr = entry.addrs[entry.next % entry.addrs.len()];
        entry.next = entry.next.wrapping_add(1);
        if !entry.refreshing && entry.at.elapsed() >= TTL.saturating_sub(REFRESH_AHEAD) {
            entry.refreshing = true;
            return Some(Hit::Refresh(addr));
        }
        Some(Hit::Fresh(Ok(addr)))
    })
}

/// An address of `host:port`, from the cache or a fresh lookup (IPv4 answers first).
pub async fn resolve(host: &str, port: u16) -> Result<SocketAddr, ProxyError> {
    match cached(host, port) {
        Some(Hit::Fresh(answer)) => answer,
        Some(Hit::Refresh(addr)) => {
            // On this worker's own runtime, so the answer lands in this worker's cache.
            let host = host.to_string();
            tokio::spawn(async move {
                let _ = lookup(&host, port).await;
            });
            Ok(addr)
        }
        None => lookup(host, port).await,
    }
}

/// Asks the system resolver and caches the answer.
async fn lookup(host: &str, port: u16) -> Result<SocketAddr, ProxyError> {
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
                refreshing: false,
            },
        )
    });
    first.ok_or(ProxyError::NameResolution)
}

/// The last known address of a name whose lookup just failed, kept until the next background try.
fn keep_stale(host: &str, port: u16) -> Option<SocketAddr> {
    CACHE.with(|c| {
        let mut c = c.borrow_mut();
        let entry = c.get_mut(&(host.to_string(), port))?;
        let addr = *entry.addrs.get(entry.next % entry.addrs.len().max(1))?;
        entry.next = entry.next.wrapping_add(1);
        // Served as is for NEGATIVE_TTL, then refreshed in the background again.
        entry.at = Instant::now()
            .checked_sub(TTL.saturating_sub(REFRESH_AHEAD + NEGATIVE_TTL))
            .unwrap_or_else(Instant::now);
        entry.refreshing = false;
        tracing::warn!(host, %addr, "DNS resolution failed; using the last known address");
        Some(addr)
    })
}

#[cfg(test)]
mod tests;
