//! The idle connections of one [`super::HttpClient`], as OpenResty's cosocket pool keeps them for Kong:
//! a delivery takes the most recently used one, gives it back when its response was read, and a
//! connection idle for longer than `keepalive` is closed. With `concurrency_limit: 1` (Kong's default)
//! that is one connection for the endpoint, reused by every delivery.
//!
//! Closing happens on time even when no delivery comes: while connections are idle, one reaper task
//! sleeps until the oldest one's keepalive ends and drops what expired (dropping hyper's sender ends the
//! connection's task, which closes the socket).

use super::Sender;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// At most this many idle connections are kept per endpoint (OpenResty's `lua_socket_pool_size`).
const MAX_IDLE: usize = 30;

pub(super) struct Pool {
    /// Idle connections and when each went idle, the most recent last.
    idle: Mutex<Vec<(Sender, Instant)>>,
    keepalive: Option<Duration>,
    /// Whether a reaper task is running.
    reaping: AtomicBool,
}

impl Pool {
    pub fn new(keepalive: Option<Duration>) -> Arc<Pool> {
        Arc::new(Pool {
            idle: Mutex::new(Vec::new()),
            keepalive,
            reaping: AtomicBool::new(false),
        })
    }

    fn idle(&self) -> MutexGuard<'_, Vec<(Sender, Instant)>> {
        self.idle.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn expired(&self, since: Instant, now: Instant) -> bool {
        self.keepalive
            .is_some_and(|k| now.duration_since(since) >= k)
    }

    /// The most recently used idle connection that is still open and within its keepalive.
    pub fn take(&self) -> Option<Sender> {
        let now = Instant::now();
        let mut idle = self.idle();
        while let Some((sender, since)) = idle.pop() {
            if !sender.is_closed() && !self.expired(since, now) {
                return Some(sender);
            }
        }
        None
    }

    /// Keeps a connection whose response was read, unless it is closing.
    pub fn put(self: &Arc<Self>, sender: Sender) {
        if sender.is_closed() {
            return;
        }
        {
            let mut idle = self.idle();
            if idle.len() >= MAX_IDLE {
                idle.remove(0);
            }
            idle.push((sender, Instant::now()));
        }
        if self.keepalive.is_some() && !self.reaping.swap(true, Ordering::AcqRel) {
            tokio::spawn(reap(self.clone()));
        }
    }

    /// Drops expired and closed connections; when the oldest kept one expires, or None (and the reaper
    /// stops, under the lock, so a connection put back meanwhile starts a new one) when none is kept.
    fn prune(&self) -> Option<Instant> {
        let now = Instant::now();
        let mut idle = self.idle();
        idle.retain(|(sender, since)| !sender.is_closed() && !self.expired(*since, now));
        let next = idle
            .first()
            .zip(self.keepalive)
            .map(|((_, since), k)| *since + k);
        if next.is_none() {
            self.reaping.store(false, Ordering::Release);
        }
        next
    }
}

/// Closes idle connections as their keepalive ends, until none is left.
async fn reap(pool: Arc<Pool>) {
    while let Some(next) = pool.prune() {
        tokio::time::sleep_until(next.into()).await;
    }
}
