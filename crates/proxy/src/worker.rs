//! One worker thread: a `current_thread` runtime, its own listeners, the downstream connections it
//! accepted, and its upstream pool. Nothing here is shared with other workers except the snapshot handle
//! and the counters.

use crate::exchange::ConnInfo;
use crate::handler;
use crate::shared::Shared;
use crate::stats::Counters;
use crate::watchdog::{self, ConnState};
use futures_util::FutureExt;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::{GracefulShutdown, Watcher};
use sluice_upstream::pool;
use std::convert::Infallible;
use std::sync::atomic::Ordering;
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
        let mut accept_tasks = Vec::new();
        for listener in listeners {
            match tokio::net::TcpListener::from_std(listener.socket) {
                Ok(l) => accept_tasks.push(tokio::spawn(accept_loop(
                    l,
                    listener.port,
                    listener.tls,
                    shared.clone(),
                    graceful.clone(),
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

/// Decrements the active-connection count when a connection ends, however it ends.
struct ActiveGuard(Arc<Shared>);

impl Drop for ActiveGuard {
    fn drop(&mut self) {
        self.0.counters.active.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The connection builder of a listener. Over TLS, HTTP/1.1 responses are flattened into one buffer
/// before writing (`writev` off): rustls turns each slice of a vectored write into its own record, so head
/// and body would cost two records and two encryptions instead of one.
fn builder(tls: bool) -> auto::Builder<TokioExecutor> {
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
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
    local_port: u16,
    tls: Option<tokio_rustls::TlsAcceptor>,
    shared: Arc<Shared>,
    graceful: Arc<GracefulShutdown>,
) {
    let builder = Arc::new(builder(tls.is_some()));
    let port_value = http::HeaderValue::from(local_port);
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
        let _ = stream.set_nodelay(true);
        Counters::bump(&shared.counters.accepted);
        Counters::bump(&shared.counters.handled);
        Counters::bump(&shared.counters.active);
        let guard = ActiveGuard(shared.clone());
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
        // A watcher, not the `GracefulShutdown` itself: shutdown needs sole ownership of it.
        let (shared, graceful, builder) = (shared.clone(), graceful.watcher(), builder.clone());
        match &tls {
            None => {
                tokio::spawn(serve(stream, info, shared, graceful, builder, guard));
            }
            Some(acceptor) => {
                let accepting = acceptor.accept(stream);
                tokio::spawn(async move {
                    // The handshake counts against the header timeout, as in nginx.
                    let timeout = shared.settings.client_header_timeout;
                    let stream = match tokio::time::timeout(timeout, accepting).await {
                        Ok(Ok(s)) => s,
                        Ok(Err(e)) => {
                            tracing::debug!(%peer, error = %e, "TLS handshake failed");
                            return;
                        }
                        Err(_) => return,
                    };
                    let tls = stream.get_ref().1;
                    let info = ConnInfo {
                        scheme: "https",
                        sni: tls.server_name().map(Arc::from),
                        tls: sluice_tls::Negotiated::of(tls),
                        ..info
                    };
                    serve(stream, info, shared, graceful, builder, guard).await
                });
            }
        }
    }
}

/// Serves one accepted connection (plain or TLS) until it closes.
async fn serve<IO>(
    io: IO,
    info: ConnInfo,
    shared: Arc<Shared>,
    graceful: Watcher,
    builder: Arc<auto::Builder<TokioExecutor>>,
    guard: ActiveGuard,
) where
    IO: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let peer = info.peer;
    let conn_shared = shared.clone();
    let state = ConnState::new();
    let conn_state = state.clone();
    let info = Arc::new(info);
    let service = service_fn(move |req| {
        Counters::bump(&conn_shared.counters.requests);
        let in_flight = conn_state.request_started();
        // `map`, not an async block: a block would hold the request's future twice (captured, then
        // moved into its await slot), and hyper moves this future into place per request.
        handler::handle(req, info.clone(), conn_shared.clone(), in_flight).map(Ok::<_, Infallible>)
    });
    // With upgrades: a WebSocket's 101 hands the connection over to its tunnel (`upgrade`).
    let conn = builder
        .serve_connection_with_upgrades(TokioIo::new(io), service)
        .into_owned();
    let conn = graceful.watch(conn);
    let timeout = shared.settings.client_header_timeout;
    match watchdog::guard(conn, state, timeout).await {
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
