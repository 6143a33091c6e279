//! HTTP/2 to upstreams, for services with `protocol: grpc` (prior knowledge, h2c) and `grpcs` (TLS with
//! ALPN `h2`): hyper's HTTP/2 client, one connection per target and TLS settings per worker, carrying
//! many streams at once. The active health probe of `type: grpc` / `grpcs` makes its own connection
//! with [`connect`], one per probe.
//!
//! Each worker keeps its connections in a thread-local map (no lock shared between workers), as the
//! HTTP/1.1 pool does. A connection stays in the map while it is open; a closed one (the upstream went
//! away, or its GOAWAY) is replaced by a new one on the next request; calls that start together share
//! the one being made. hyper queues streams past the
//! upstream's `SETTINGS_MAX_CONCURRENT_STREAMS` on the same connection.
//!
//! Kong's keep-alive settings ([`crate::pool::Keepalive`]) hold here as nginx holds them for `grpc_pass`:
//! a connection that has opened `upstream_keepalive_max_requests` streams takes no more (the next call
//! opens a new one; the old one closes once its streams end), and one with no stream open for
//! `upstream_keepalive_idle_timeout` is closed. A call holds a [`Lease`] on its connection until its
//! response ends, which is what "open" means here.

use crate::body::ProxyBody;
use crate::conn::{server_name, PoolKey, TlsTarget};
use crate::error::UpstreamError;
use crate::pool;
use hyper::client::conn::http2::{self, SendRequest};
use hyper_util::rt::{TokioIo, TokioTimer};
use rustc_hash::FxHashMap;
use sluice_tls::rustls::ClientConfig;
use std::cell::RefCell;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;
use tokio::net::TcpStream;
use tokio::sync::OnceCell;
use tokio::time::Instant;

/// The flow-control windows offered to upstreams: per stream, and for the whole connection.
const STREAM_WINDOW: u32 = 1 << 20;
const CONNECTION_WINDOW: u32 = 16 << 20;

/// The handle a request sends its stream on (cheap to clone: the connection is shared).
pub type Sender = SendRequest<ProxyBody>;

/// A target's connection, made once however many calls ask for it at the same time.
type Slot = Arc<OnceCell<(Sender, Arc<Activity>, Nudge)>>;

/// What a pooled connection's calls did, for its keep-alive limits: calls open now, calls ever started,
/// and when the last one ended.
#[derive(Default)]
struct Activity {
    open: AtomicU32,
    started: AtomicU32,
    /// Milliseconds since [`epoch`] when the last call ended (or the connection was made).
    idle_since_ms: AtomicU64,
}

/// A call's hold on its connection: while one is alive the connection is not idle. Dropped when the
/// call's response has ended (or failed).
pub struct Lease(Arc<Activity>, Nudge);

impl Lease {
    /// Drives the connection once, now: called right after the call was handed to it, so that its
    /// frames leave before the worker runs the other tasks woken meanwhile ([`Nudge`]).
    pub fn drive_now(&self) {
        self.1.now();
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.0.idle_since_ms.store(now_ms(), Ordering::Relaxed);
        self.0.open.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The clock the connections' idle times and the calls' write stamps are kept in, as milliseconds in
/// one atomic each (tokio's clock, so paused-time tests see it move).
fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

/// Milliseconds since [`epoch`].
fn now_ms() -> u64 {
    Instant::now()
        .saturating_duration_since(epoch())
        .as_millis() as u64
}

/// The instant `ms` milliseconds after [`epoch`] (far in the future when past what `Instant` holds).
fn instant_of(ms: u64) -> Instant {
    epoch()
        .checked_add(Duration::from_millis(ms))
        .unwrap_or_else(|| Instant::now() + Duration::from_secs(86_400 * 365))
}

thread_local! {
    static CONNS: RefCell<FxHashMap<PoolKey, Slot>> = RefCell::new(FxHashMap::default());
    /// The services' TLS configs with ALPN `h2`, by their settings' key.
    static ALPN: RefCell<FxHashMap<u64, Arc<ClientConfig>>> = RefCell::new(FxHashMap::default());
}

/// An open HTTP/2 connection to `key`'s target: this worker's, or a new one within `connect_timeout`
/// (TCP, TLS and the HTTP/2 preface together; 504 past it, 502 when refused or the handshake fails).
/// Calls that arrive while it is being made wait for it instead of opening their own; when making it
/// fails, the next waiting call tries again. The [`Lease`] is to be held until the call's response ends.
pub async fn sender(
    key: PoolKey,
    tls: Option<TlsTarget<'_>>,
    connect_timeout: Duration,
) -> Result<(Sender, Lease), UpstreamError> {
    let limits = pool::limits();
    let slot = CONNS.with(|c| {
        let mut c = c.borrow_mut();
        let slot = c.entry(key).or_default();
        let spent = |(s, a, _): &(Sender, Arc<Activity>, Nudge)| {
            s.is_closed() || !limits.allows_another(a.started.load(Ordering::Relaxed))
        };
        if slot.get().is_some_and(spent) {
            *slot = Slot::default();
        }
        slot.clone()
    });
    let made = slot.get_or_try_init(|| async {
        let connecting = async {
            let activity = Arc::new(Activity::default());
            activity.idle_since_ms.store(now_ms(), Ordering::Relaxed);
            let watch = (activity.clone(), limits.idle_bound());
            let (sender, nudge) = connect_watched(key, tls, Some(watch)).await?;
            Ok((sender, activity, nudge))
        };
        match tokio::time::timeout(connect_timeout, Box::pin(connecting)).await {
            Err(_) => Err(UpstreamError::Timeout),
            Ok(result) => result,
        }
    });
    let (sender, activity, nudge) = made.await?;
    // Taken before this task yields again, so the idle watch never closes a connection a call holds.
    activity.open.fetch_add(1, Ordering::Relaxed);
    activity.started.fetch_add(1, Ordering::Relaxed);
    Ok((sender.clone(), Lease(activity.clone(), nudge.clone())))
}

/// A new HTTP/2 connection to `key`'s target, in no map: TCP, TLS with ALPN `h2` when `tls` is given,
/// and the preface, with no deadline of its own (callers bound it). A task drives the connection until
/// it closes, which it does once every [`Sender`] of it is dropped and its streams are done. [`sender`]
/// makes the workers' shared connections with it; an active health probe (`type: grpc`), one per probe.
pub async fn connect(key: PoolKey, tls: Option<TlsTarget<'_>>) -> Result<Sender, UpstreamError> {
    Ok(connect_watched(key, tls, None).await?.0)
}

/// [`connect`], with the connection closed once idle for the given time when `watch` is given.
async fn connect_watched(
    key: PoolKey,
    tls: Option<TlsTarget<'_>>,
    watch: Option<(Arc<Activity>, Duration)>,
) -> Result<(Sender, Nudge), UpstreamError> {
    let addr = key.addr;
    let refused = |e: &dyn std::fmt::Display| {
        tracing::debug!(%addr, error = %e, "upstream h2 connect failed");
        UpstreamError::Connect
    };
    let tcp = TcpStream::connect(addr).await.map_err(|e| refused(&e))?;
    let _ = tcp.set_nodelay(true);
    let local = Local::new();
    let mut builder = http2::Builder::new(local.clone());
    builder
        .timer(TokioTimer::new())
        .keep_alive_interval(Some(Duration::from_secs(30)))
        // Fixed windows, not hyper's adaptive ones, which start at 64 KiB: h2 bounds the small DATA
        // frames received and not yet read to a budget of half the connection window, and a gRPC reply
        // is one small frame before its trailers. With 64 KiB, ~130 calls in flight whose replies wait
        // for a busy worker ended the connection (GOAWAY ENHANCE_YOUR_CALM, every call on it failed).
        // 16 MiB lets ~33,000 wait; a window is a permit, not memory set aside.
        .initial_stream_window_size(STREAM_WINDOW)
        .initial_connection_window_size(CONNECTION_WINDOW);
    let Some(t) = tls else {
        return start(&builder, local, tcp, watch)
            .await
            .map_err(|e| refused(&e));
    };
    let config = alpn_h2(t.tls.key, &t.tls.config);
    let connector = tokio_rustls::TlsConnector::from(config);
    let stream = connector
        .connect(server_name(t.server_name, addr), tcp)
        .await
        .map_err(|e| refused(&e))?;
    start(&builder, local, stream, watch)
        .await
        .map_err(|e| refused(&e))
}

/// The preface on `io` (its small writes [`Corked`]), then a task drives the connection, with the futures
/// hyper hands to `local` and the connection's dispatch among them ([`local`]). Generic over the stream
/// rather than through [`crate::conn::Stream`]: sharing that type's I/O with the HTTP/1.1 client kept it
/// from being inlined there (~160 instructions per request).
async fn start<IO>(
    builder: &http2::Builder<Local>,
    local: Local,
    io: IO,
    watch: Option<(Arc<Activity>, Duration)>,
) -> hyper::Result<(Sender, Nudge)>
where
    IO: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (sender, conn) = builder.handshake(TokioIo::new(Corked::new(io))).await?;
    hyper::rt::Executor::execute(&local, serve(conn, watch));
    let running = Arc::new(Mutex::new(local.running()));
    let nudge = Nudge(Arc::downgrade(&running));
    tokio::spawn(drive(running));
    Ok((sender, nudge))
}

/// Runs the connection's futures until the last one ends (what is left is dropped with the set however
/// this task ends, the runtime shutting down included: the calls' [`Nudge`]s hold it weakly).
async fn drive(running: Arc<Mutex<Running>>) {
    std::future::poll_fn(|cx| {
        let mut running = running.lock().unwrap_or_else(|e| e.into_inner());
        running.note_driver(cx.waker());
        running.poll(cx)
    })
    .await;
}

/// Runs a connection until it closes (its streams are served while this future is polled), or, with
/// `watch`, until no call has held it for the idle time: then the connection is dropped, its
/// [`Sender`]s report closed, so the next call makes a new one, and its I/O closes the socket once its
/// streams are done.
async fn serve<F: std::future::Future<Output = hyper::Result<()>>>(
    conn: F,
    watch: Option<(Arc<Activity>, Duration)>,
) {
    let idle = async {
        let Some((activity, limit)) = watch else {
            return std::future::pending().await;
        };
        let limit_ms = limit.as_millis().min(u64::MAX as u128) as u64;
        loop {
            let due = match activity.open.load(Ordering::Relaxed) {
                0 => activity
                    .idle_since_ms
                    .load(Ordering::Relaxed)
                    .saturating_add(limit_ms),
                _ => now_ms().saturating_add(limit_ms),
            };
            if due <= now_ms() && activity.open.load(Ordering::Relaxed) == 0 {
                return;
            }
            tokio::time::sleep_until(instant_of(due)).await;
        }
    };
    tokio::select! {
        result = conn => {
            if let Err(e) = result {
                tracing::debug!(error = %e, "upstream h2 connection closed");
            }
        }
        () = idle => tracing::debug!("idle upstream h2 connection closed"),
    }
}

/// The service's TLS config, offering `h2` by ALPN (made once per worker and settings).
fn alpn_h2(key: u64, base: &Arc<ClientConfig>) -> Arc<ClientConfig> {
    ALPN.with(|a| {
        a.borrow_mut()
            .entry(key)
            .or_insert_with(|| {
                let mut config = ClientConfig::clone(base);
                config.alpn_protocols = vec![b"h2".to_vec()];
                Arc::new(config)
            })
            .clone()
    })
}

mod cork;
mod local;
mod write_watch;
use cork::Corked;
pub use local::Local;
use local::{Nudge, Running};
pub use write_watch::{watch, WriteWatch};

#[cfg(test)]
mod tests;
