//! The client header timeout, per connection instead of per request.
//!
//! hyper's own `header_read_timeout` arms a timer for every request head; with keep-alive that is a timer
//! registration and cancellation per request, measured at ~2 µs of the ~24 µs a proxied request costs (wrk,
//! no plugins, 1 worker: 40.2k → 43.1k RPS without it). Here each connection has a small shared state the
//! request path updates with two atomic stores, and one watchdog wakes a few times per timeout to close a
//! connection that has been waiting for a request head for longer than `client_header_timeout`.
//!
//! "Waiting for a head" starts when the connection is accepted and whenever its last in-flight response has
//! been sent (hyper's rule too). Until the first response the limit is `client_header_timeout`; after it,
//! nginx's `keepalive_timeout` bounds the idle connection (and a next head trickled byte by byte, which
//! nginx would bound by `client_header_timeout` from its first byte: the watchdog cannot see that byte).

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::time::Instant;

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};

use crate::stats::Counters;
use sluice_upstream::body::{BoxError, ProxyBody};

/// Milliseconds since the first call in this process (a monotonic clock cheap to store in an atomic).
pub(crate) fn now_ms() -> u64 {
    // tokio's clock (the std clock in production; pausable in tests).
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    // +1 keeps 0 free to mean "not waiting".
    EPOCH.get_or_init(Instant::now).elapsed().as_millis() as u64 + 1
}

/// One connection's request accounting, shared by its requests and its watchdog.
pub struct ConnState {
    in_flight: AtomicU32,
    /// The node's counters: a connection counts as busy (nginx's `writing`) while a request is in flight.
    counters: Arc<Counters>,
    /// When the connection began waiting for a request head (ms, see [`now_ms`]); 0 while requests run.
    waiting_since: AtomicU64,
    /// A response has been sent: the keep-alive limit applies from now on.
    served: AtomicBool,
}

impl ConnState {
    /// A freshly accepted connection: waiting for its first head.
    pub fn new(counters: Arc<Counters>) -> Arc<ConnState> {
        Self::accepted_at(counters, now_ms())
    }

    /// A connection accepted at `ms` ([`now_ms`]) and waiting for its first head since: the header
    /// timeout counts from then.
    pub fn accepted_at(counters: Arc<Counters>, ms: u64) -> Arc<ConnState> {
        Arc::new(ConnState {
            in_flight: AtomicU32::new(0),
            counters,
            waiting_since: AtomicU64::new(ms),
            served: AtomicBool::new(false),
        })
    }

    /// A request head arrived. Call when the service is called; the request counts as in flight until the
    /// returned guard is dropped, however it ends: with its response body ([`Tracked`]), or with its future
    /// when hyper drops that first (an HTTP/2 stream the client reset, a connection that broke).
    pub fn request_started(self: &Arc<Self>) -> InFlight {
        if self.in_flight.fetch_add(1, Ordering::Relaxed) == 0 {
            Counters::bump(&self.counters.busy);
        }
        self.waiting_since.store(0, Ordering::Relaxed);
        InFlight(self.clone())
    }

    /// A response was sent (or dropped); the last one makes the connection wait for a head again.
    fn request_finished(&self) {
        if self.in_flight.fetch_sub(1, Ordering::Relaxed) == 1 {
            self.counters.busy.fetch_sub(1, Ordering::Relaxed);
            self.served.store(true, Ordering::Relaxed);
            self.waiting_since.store(now_ms(), Ordering::Relaxed);
        }
    }

    /// Resolves when the connection has waited for a head for longer than its limit: `limits.header` before
    /// its first response, `limits.keepalive` after it.
    pub async fn expired(self: Arc<Self>, limits: Limits) {
        let (header, keepalive) = (
            limits.header.as_millis() as u64,
            limits.keepalive.as_millis() as u64,
        );
        let tick = (limits.header.min(limits.keepalive) / 4).max(Duration::from_millis(50));
        loop {
            tokio::time::sleep(tick).await;
            let since = self.waiting_since.load(Ordering::Relaxed);
            let limit = match self.served.load(Ordering::Relaxed) {
                true => keepalive,
                false => header,
            };
            if since != 0 && now_ms().saturating_sub(since) >= limit {
                return;
            }
        }
    }
}

/// How long a connection may wait for a request head.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Before the first response (`client_header_timeout`).
    pub header: Duration,
    /// After a response (`keepalive_timeout`).
    pub keepalive: Duration,
}

/// One request in flight on a connection; dropping it ends the request for the connection's accounting.
pub struct InFlight(Arc<ConnState>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.request_finished();
    }
}

/// A response body that keeps its request in flight until it is done (dropped by hyper after the last byte
/// was written, or when the client went away).
pub struct Tracked {
    inner: ProxyBody,
    _in_flight: InFlight,
}

impl Tracked {
    pub fn new(inner: ProxyBody, in_flight: InFlight) -> Tracked {
        Tracked {
            inner,
            _in_flight: in_flight,
        }
    }
}

impl Body for Tracked {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// Drives `conn` until it ends or `state` says it waited too long for a request head (then it is dropped,
/// which closes the socket).
///
/// `conn` is pinned where it was passed: moved into the `select!` instead, it would be stored twice in
/// this future, which every idle connection holds (an async fn's argument keeps its slot after a move).
pub async fn guard<F: Future>(conn: F, state: Arc<ConnState>, limits: Limits) -> Option<F::Output> {
    tokio::pin!(conn);
    tokio::select! {
        out = &mut conn => Some(out),
        () = state.expired(limits) => None,
    }
}

#[cfg(test)]
mod tests;
