//! Per-worker pools of upstream HTTP/1.1 connections.
//!
//! Each worker thread keeps its own idle connections per target address (a thread-local: workers never
//! share a lock). A connection goes back to the pool when its response body has been read to the end
//! ([`crate::pooled::PooledBody`]); a body dropped early takes its connection with it. Connecting is separate
//! from sending, so the caller knows a failure happened before any byte of the request left, which is when
//! retrying is safe.

pub use crate::conn::{Conn, PoolKey, TlsTarget};
use crate::error::UpstreamError;
use rustc_hash::FxHashMap;
use std::cell::RefCell;
use std::collections::VecDeque;
use std::time::{Duration, Instant};

struct Idle {
    conn: Conn,
    since: Instant,
}

/// How upstream connections are kept between requests: Kong's `upstream_keepalive_*` settings, for the
/// HTTP/1.1 pool here and the HTTP/2 connections of [`crate::h2`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Keepalive {
    /// Idle HTTP/1.1 connections kept per target (address, TLS name) and worker
    /// (`upstream_keepalive_pool_size`, 512; 0 keeps none).
    pub pool_size: usize,
    /// Requests one connection carries before it is closed (`upstream_keepalive_max_requests`, 10000;
    /// 0: no limit). For HTTP/2, the streams one connection opens.
    pub max_requests: u32,
    /// How long an unused connection is kept open (`upstream_keepalive_idle_timeout`, 60 s; 0: no limit).
    pub idle_timeout: Duration,
}

impl Default for Keepalive {
    fn default() -> Keepalive {
        Keepalive {
            pool_size: 512,
            max_requests: 10_000,
            idle_timeout: Duration::from_secs(60),
        }
    }
}

impl Keepalive {
    /// The idle timeout as a bound (none: a duration no connection reaches).
    pub fn idle_bound(&self) -> Duration {
        match self.idle_timeout.is_zero() {
            true => Duration::MAX,
            false => self.idle_timeout,
        }
    }

    /// Whether a connection that has carried `served` requests may carry another.
    pub fn allows_another(&self, served: u32) -> bool {
        self.max_requests == 0 || served < self.max_requests
    }
}

struct Pool {
    /// Keyed with a fast non-DoS-resistant hash: the keys are the config's own target addresses.
    idle: FxHashMap<PoolKey, VecDeque<Idle>>,
    limits: Keepalive,
}

thread_local! {
    static POOL: RefCell<Pool> = RefCell::new(Pool {
        idle: FxHashMap::default(),
        limits: Keepalive::default(),
    });
}

/// Sets this worker's keep-alive limits (called once when the worker starts).
pub fn configure(limits: Keepalive) {
    POOL.with(|p| p.borrow_mut().limits = limits);
}

/// This worker's keep-alive limits.
pub fn limits() -> Keepalive {
    POOL.with(|p| p.borrow().limits)
}

/// An idle pooled connection for `key`, or a new one (502 when refused or the TLS handshake fails, 504 on
/// connect timeout; `connect_timeout` covers the TCP connect and the TLS handshake together). `now` is
/// the caller's latest clock read, against which idle connections are aged (saves reading it again).
pub async fn checkout(
    key: PoolKey,
    tls: Option<TlsTarget<'_>>,
    connect_timeout: Duration,
    now: Instant,
) -> Result<Conn, UpstreamError> {
    let idle = take_idle(key, now);
    crate::metrics::count_checkout(idle.is_some());
    if let Some(conn) = idle {
        return Ok(conn);
    }
    // Boxed: connecting is once per connection, and its state (TCP and TLS handshakes, ~1.6 KB)
    // would otherwise sit inside every request's future, which hyper and tokio move around.
    match Box::pin(tokio::time::timeout(
        connect_timeout,
        Conn::connect(key, tls),
    ))
    .await
    {
        Err(_) => Err(UpstreamError::Timeout),
        Ok(result) => result,
    }
}

fn take_idle(key: PoolKey, now: Instant) -> Option<Conn> {
    POOL.with(|p| {
        let mut p = p.borrow_mut();
        let timeout = p.limits.idle_bound();
        let queue = p.idle.get_mut(&key)?;
        while let Some(mut idle) = queue.pop_back() {
            if now.saturating_duration_since(idle.since) < timeout && idle.conn.is_idle_clean() {
                return Some(idle.conn);
            }
        }
        None
    })
}

/// Returns a connection whose exchange finished cleanly, unless it has carried its
/// `upstream_keepalive_max_requests`. The oldest idle connections of that address are dropped when past
/// the idle timeout or over the cap.
pub fn checkin(mut conn: Conn) {
    conn.served = conn.served.saturating_add(1);
    POOL.with(|p| {
        let mut p = p.borrow_mut();
        let (max, timeout) = (p.limits.pool_size, p.limits.idle_bound());
        if !p.limits.allows_another(conn.served) {
            return;
        }
        let queue = p.idle.entry(conn.key).or_default();
        let now = Instant::now();
        while queue
            .front()
            .is_some_and(|i| now.saturating_duration_since(i.since) >= timeout)
        {
            queue.pop_front();
        }
        if queue.len() >= max {
            queue.pop_front();
        }
        if max > 0 {
            queue.push_back(Idle { conn, since: now });
        }
    });
}

/// Idle connections this worker holds to `addr`.
#[cfg(test)]
pub fn idle_count(key: PoolKey) -> usize {
    POOL.with(|p| p.borrow().idle.get(&key).map_or(0, VecDeque::len))
}

#[cfg(test)]
mod tests;
