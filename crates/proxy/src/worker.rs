//! One worker thread: a `current_thread` runtime, its own listeners, the downstream connections it
//! accepted, and its upstream pool. Nothing here is shared with other workers except the snapshot handle
//! and the counters.

use crate::exchange::ConnInfo;
use crate::handler;
use crate::shared::Shared;
use crate::stats::Counters;
use crate::watchdog::{self, ConnState, Limits};
use futures_util::FutureExt;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::{GracefulShutdown, Watcher};
use sluice_upstream::pool;
use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// Largest request head (request line + headers) a client may send.
const MAX_HEAD_BYTES: usize = 64 * 1024;

/// One bound listening socket of a worker.
pub struct Listener {
    pub socket: std::net::TcpListener,
    pub port: u16,
    /// Set for `ssl` listeners.
    pub tls: Option<tokio_rustls::TlsAcceptor>,
}

/// Runs a worker until `stop` carries a grace period, then drains its connections for at most that long.
pub fn run(
    index: usize,
    listeners: Vec<Listener>,
    streams: Vec<crate::stream::Bound>,
    shared: Arc<Shared>,
    mut stop: watch::Receiver<Option<Duration>>,
) {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            tracing::error!(error = %e, "cannot start a worker runtime");
            return;
        }
    };
    sluice_upstream::metrics::set_worker(index);
    pool::configure(
        shared.settings.upstream_keepalive,
        shared.settings.upstream_idle_timeout,
    );
    runtime.block_on(async move {
        let graceful = Arc::new(GracefulShutdown::new());
        let open = Arc::new(AtomicUsize::new(0));
        let mut accept_tasks = Vec::new();
        for listener in listeners {
            match tokio::net::TcpListener::from_std(listener.socket) {
                Ok(l) => accept_tasks.push(tokio::spawn(accept_loop(
                    l,
                    (listener.port, listener.tls),
                    shared.clone(),
                    Worker {
                        graceful: graceful.clone(),
                        open: open.clone(),
                        stop: stop.clone(),
                    },
                ))),
                Err(e) => tracing::error!(error = %e, "cannot register a listener"),
            }
        }
        accept_tasks.extend(crate::stream::spawn(streams, &shared));
        let grace = loop {
            if let Some(grace) = *stop.borrow_and_update() {
                break grace;
            }
            if stop.changed().await.is_err() {
                break Duration::ZERO;
            }
        };
        for t in &accept_tasks {
            t.abort();
        }
        for t in accept_tasks {
            let _ = t.await;
        }
        if let Ok(graceful) = Arc::try_unwrap(graceful) {
            if tokio::time::timeout(grace, graceful.shutdown())
                .await
                .is_err()
            {
                tracing::warn!("grace period over; closing the remaining connections");
            }
        }
    });
}

/// What the accept loops of one worker share.
struct Worker {
    graceful: Arc<GracefulShutdown>,
    /// Client connections open on this worker (bounded by `worker_connections`).
    open: Arc<AtomicUsize>,
    stop: watch::Receiver<Option<Duration>>,
}

/// Decrements the active-connection counts (the node's and the worker's) when a connection ends, however
/// it ends.
struct ActiveGuard(Arc<Shared>, Arc<AtomicUsize>);

impl Drop for ActiveGuard {
    fn drop(&mut self) {
        self.0.counters.active.fetch_sub(1, Ordering::Relaxed);
        self.1.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The connection builder of a listener. Over TLS, HTTP/1.1 responses are flattened into one buffer
/// before writing (`writev` off): rustls turns each slice of a vectored write into its own record, so head
/// and body would cost two records and two encryptions instead of one.
fn builder(tls: bool, shared: &Shared) -> auto::Builder<TokioExecutor> {
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .keep_alive(!shared.settings.keepalive_timeout.is_zero())
        .writev(!tls)
        .timer(TokioTimer::new())
        // The header timeout is per connection (`watchdog`), not a timer per request.
        .header_read_timeout(None)
        .max_buf_size(MAX_HEAD_BYTES);
    // RFC 8441's extended CONNECT: WebSocket over h2 (`upgrade`).
    builder
        .http2()
        .timer(TokioTimer::new())
        .enable_connect_protocol();
    builder
}

async fn accept_loop(
    listener: tokio::net::TcpListener,
    (local_port, tls): (u16, Option<tokio_rustls::TlsAcceptor>),
    shared: Arc<Shared>,
    worker: Worker,
) {
    let builder = Arc::new(builder(tls.is_some(), &shared));
    let port_value = http::HeaderValue::from(local_port);
    let mut warned = None::<std::time::Instant>;
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(x) => x,
            Err(e) => {
                // Out of file descriptors and the like: back off instead of spinning.
                tracing::warn!(error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        if worker.open.load(Ordering::Relaxed) >= shared.settings.worker_connections {
            // nginx's answer too: the connection is closed at once, and the worker does not grow.
            if warned.is_none_or(|t| t.elapsed() >= Duration::from_secs(1)) {
                tracing::warn!(limit = shared.settings.worker_connections, %peer, "worker_connections are not enough; closing a new connection");
                warned = Some(std::time::Instant::now());
            }
            continue;
        }
        worker.open.fetch_add(1, Ordering::Relaxed);
        let _ = stream.set_nodelay(true);
        Counters::bump(&shared.counters.accepted);
        Counters::bump(&shared.counters.handled);
        Counters::bump(&shared.counters.active);
        let guard = ActiveGuard(shared.clone(), worker.open.clone());
        // From now on the connection waits for its first head (the header timeout counts from here).
        let state = ConnState::new();
        let info = ConnInfo {
            peer,
            peer_ip: http::HeaderValue::from_str(&peer.ip().to_string())
                .unwrap_or(http::HeaderValue::from_static("")),
            local_port: port_value.clone(),
            port: local_port,
            scheme: "http",
            sni: None,
            tls: None,
        };
        let accepted = Accepted {
            shared: shared.clone(),
            // A watcher, not the `GracefulShutdown` itself: shutdown needs sole ownership of it.
            graceful: worker.graceful.watcher(),
            builder: builder.clone(),
            guard,
            state,
        };
        let stop = worker.stop.clone();
        match &tls {
            None => {
                tokio::spawn(async move {
                    if first_bytes(&stream, &accepted.shared, stop).await {
                        // Boxed: until its client speaks, a connection's task holds only this pointer.
                        Box::pin(accepted.serve(stream, info)).await
                    }
                });
            }
            Some(acceptor) => {
                let accepting = acceptor.accept(stream);
                tokio::spawn(async move {
                    // The handshake counts against the header timeout, as in nginx.
                    let timeout = accepted.shared.settings.client_header_timeout;
                    let stream = match tokio::time::timeout(timeout, accepting).await {
                        Ok(Ok(s)) => s,
                        Ok(Err(e)) => {
                            tracing::debug!(%peer, error = %e, "TLS handshake failed");
                            return;
                        }
                        Err(_) => return,
                    };
                    let (tcp, tls) = stream.get_ref();
                    // Nothing decrypted is waiting: the request has not come yet.
                    if tls.wants_read() && !first_bytes(tcp, &accepted.shared, stop).await {
                        return;
                    }
                    let info = ConnInfo {
                        scheme: "https",
                        sni: tls.server_name().map(Arc::from),
                        tls: sluice_tls::Negotiated::of(tls),
                        ..info
                    };
                    Box::pin(accepted.serve(stream, info)).await
                });
            }
        }
    }
}

/// An accepted connection's share of its worker, until the client speaks and [`Accepted::serve`] runs.
struct Accepted {
    shared: Arc<Shared>,
    graceful: Watcher,
    builder: Arc<auto::Builder<TokioExecutor>>,
    guard: ActiveGuard,
    /// Waiting for the first head since the accept.
    state: Arc<ConnState>,
}

/// Waits until the client sent something (or closed): hyper's connection, with its buffers and state, is
/// built only then, so a connected but silent client costs its socket and a small task. False when the
/// header timeout passed first or the worker is stopping.
async fn first_bytes(
    tcp: &tokio::net::TcpStream,
    shared: &Shared,
    mut stop: watch::Receiver<Option<Duration>>,
) -> bool {
    let timeout = shared.settings.client_header_timeout;
    // `peek`, not `readable`: readiness may be reported spuriously (a fresh socket often is), and
    // `peek` waits past that for a byte (or the end of the stream) without taking it.
    let mut byte = [0u8; 1];
    tokio::select! {
        ready = tokio::time::timeout(timeout, tcp.peek(&mut byte)) => matches!(ready, Ok(Ok(_))),
        _ = stop.wait_for(Option::is_some) => false,
    }
}

impl Accepted {
    /// Serves the connection (plain or TLS) until it closes.
    async fn serve<IO>(self, io: IO, info: ConnInfo)
    where
        IO: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        let Accepted {
            shared,
            graceful,
            builder,
            guard,
            state,
        } = self;
        let peer = info.peer;
        let conn_shared = shared.clone();
        let conn_state = state.clone();
        let info = Arc::new(info);
        let service = service_fn(move |req| {
            Counters::bump(&conn_shared.counters.requests);
            let in_flight = conn_state.request_started();
            // `map`, not an async block: a block would hold the request's future twice (captured, then
            // moved into its await slot), and hyper moves this future into place per request.
            handler::handle(req, info.clone(), conn_shared.clone(), in_flight)
                .map(Ok::<_, Infallible>)
        });
        // With upgrades: a WebSocket's 101 hands the connection over to its tunnel (`upgrade`).
        let conn = builder
            .serve_connection_with_upgrades(TokioIo::new(io), service)
            .into_owned();
        let conn = graceful.watch(conn);
        let limits = Limits {
            header: shared.settings.client_header_timeout,
            keepalive: match shared.settings.keepalive_timeout {
                // Keep-alive off: hyper closes after each response.
                Duration::ZERO => shared.settings.client_header_timeout,
                keepalive => keepalive,
            },
        };
        match watchdog::guard(conn, state, limits).await {
            Some(Err(e)) => {
                tracing::debug!(error = %e, "downstream connection ended with an error")
            }
            Some(Ok(())) => {}
            None => {
                tracing::debug!(%peer, "closed: no request head within client_header_timeout")
            }
        }
        drop(guard);
    }
}
