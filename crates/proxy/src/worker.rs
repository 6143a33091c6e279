//! One worker thread: a `current_thread` runtime, its own listeners, the downstream connections it
//! accepted, and its upstream pool. Nothing here is shared with other workers except the snapshot handle
//! and the counters.

use crate::downstream::{ClientBody, Conn, Handed, Transport};
use crate::exchange::ConnInfo;
use crate::handler;
use crate::shared::Shared;
use crate::stats::Counters;
use crate::watchdog::{self, ConnState, Limits};
use futures_util::future::Either;
use futures_util::FutureExt;
use hyper::server::conn::http2;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::{GracefulShutdown, Watcher};
use sluice_upstream::h2::Local;
use sluice_upstream::pool;
use std::convert::Infallible;
use std::future::{poll_fn, Future};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use waiting::{Room, Silent};

mod waiting;

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
    shared
        .counters
        .runtimes
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(runtime.handle().clone());
    pool::configure(shared.settings.upstream_keepalive);
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
        // h2 connections drain through hyper's graceful shutdown; HTTP/1.1 connections end by themselves
        // after their request in flight (they watch `stop`). Both within the grace period.
        let drained = async {
            if let Ok(graceful) = Arc::try_unwrap(graceful) {
                graceful.shutdown().await;
            }
            while open.load(Ordering::Relaxed) > 0 {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        };
        if tokio::time::timeout(grace, drained).await.is_err() {
            tracing::warn!("grace period over; closing the remaining connections");
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

/// The HTTP/2 connection builder of one connection (h2 over TLS by ALPN, or h2c with prior knowledge);
/// HTTP/1.1 is Sluice's own loop ([`crate::downstream`]). Its streams' futures go to `streams`, the
/// connection's own executor ([`serve_h2`]).
///
/// `send_timeout` is nginx's bound on a client that stops reading. hyper's h2 server has no write
/// deadline, so its keep-alive PING stands in: a client that sent no frame for half of it is pinged, and a
/// connection whose PING is not answered within the other half is closed (with the upstream connections of
/// its open responses). A client that reads its socket but withholds flow-control credit answers PINGs and
/// is not bounded this way (docs/differences.md).
fn h2_builder(send_timeout: Duration, streams: Local) -> http2::Builder<Local> {
    let mut builder = http2::Builder::new(streams);
    builder
        .timer(TokioTimer::new())
        // RFC 8441's extended CONNECT: WebSocket over h2 (`upgrade`).
        .enable_connect_protocol();
    if !send_timeout.is_zero() {
        builder
            .keep_alive_interval(send_timeout / 2)
            .keep_alive_timeout(send_timeout / 2);
    }
    builder
}

async fn accept_loop(
    listener: tokio::net::TcpListener,
    (local_port, tls): (u16, Option<tokio_rustls::TlsAcceptor>),
    shared: Arc<Shared>,
    worker: Worker,
) {
    let port_value = http::HeaderValue::from(local_port);
    let info = |peer: SocketAddr| ConnInfo {
        peer,
        peer_ip: http::HeaderValue::from_str(&peer.ip().to_string())
            .unwrap_or(http::HeaderValue::from_static("")),
        trusted: shared.trust.is_trusted(peer.ip()),
        local_port: port_value.clone(),
        port: local_port,
        scheme: "http",
        sni: None,
        tls: None,
    };
    let accepted = |guard, state| Accepted {
        shared: shared.clone(),
        // A watcher, not the `GracefulShutdown` itself: shutdown needs sole ownership of it.
        graceful: worker.graceful.watcher(),
        guard,
        state,
        stop: worker.stop.clone(),
    };
    // Plain connections whose client has not spoken yet (worker/waiting.rs).
    let mut room = Room::new(shared.settings.client_header_timeout);
    let mut warned = None::<std::time::Instant>;
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(x) => x,
                Err(e) => {
                    // Out of file descriptors and the like: back off instead of spinning.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                }
            },
            spoke = poll_fn(|cx| room.poll_spoke(cx)) => {
                // The client spoke: its connection is served by a task of its own, built now.
                let Silent { stream, peer, guard, accepted_ms } = spoke;
                let state = ConnState::accepted_at(shared.counters.clone(), accepted_ms);
                tokio::spawn(accepted(guard, state).serve(stream, info(peer), false));
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
        let Some(acceptor) = &tls else {
            let accepted_ms = watchdog::now_ms();
            room.enter(Silent {
                stream,
                peer,
                guard,
                accepted_ms,
            });
            continue;
        };
        let mut accepted = accepted(guard, ConnState::new(shared.counters.clone()));
        let info = info(peer);
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
            if tls.wants_read() && !first_bytes(tcp, &accepted.shared, &mut accepted.stop).await {
                return;
            }
            let h2 = tls.alpn_protocol() == Some(b"h2");
            let info = ConnInfo {
                scheme: "https",
                sni: tls.server_name().map(Arc::from),
                tls: sluice_tls::Negotiated::of(tls),
                ..info
            };
            // Served by a task of its own, sized for serving alone: this one, sized for the handshake,
            // ends.
            tokio::spawn(accepted.serve(stream, info, h2));
        });
    }
}

/// An accepted connection's share of its worker, until the client speaks and [`Accepted::serve`] runs.
struct Accepted {
    shared: Arc<Shared>,
    graceful: Watcher,
    guard: ActiveGuard,
    /// Waiting for the first head since the accept.
    state: Arc<ConnState>,
    stop: watch::Receiver<Option<Duration>>,
}

/// Waits until a TLS client sent something after its handshake (or closed): the connection's buffers and
/// state are built only then. False when the header timeout passed first or the worker is stopping.
/// (A plain connection waits in the listener's [`Room`] instead.)
async fn first_bytes(
    tcp: &tokio::net::TcpStream,
    shared: &Shared,
    stop: &mut watch::Receiver<Option<Duration>>,
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
    /// Serves the connection (plain or TLS) until it closes: HTTP/1.1 by Sluice's own loop, h2 (`h2`: ALPN
    /// said so) by hyper's.
    ///
    /// Not an `async fn`: the future is built here and returned, so the connection (its socket, TLS state
    /// included) is stored once in it. An async fn would keep its arguments' slots beside the future they
    /// were moved into, and every idle connection holds this future.
    fn serve<IO: Transport>(self, io: IO, info: ConnInfo, h2: bool) -> impl Future<Output = ()> {
        let Accepted {
            shared,
            graceful,
            guard,
            state,
            stop,
        } = self;
        let peer = info.peer;
        let info = Arc::new(info);
        let limits = Limits {
            header: shared.settings.client_header_timeout,
            keepalive: match shared.settings.keepalive_timeout {
                // Keep-alive off: the connection closes after each response.
                Duration::ZERO => shared.settings.client_header_timeout,
                keepalive => keepalive,
            },
        };
        let h2_conn = {
            let (info, shared, state) = (info.clone(), shared.clone(), state.clone());
            move |io| serve_h2(io, graceful, info, shared, state)
        };
        let served = match h2 {
            // Boxed: hyper's h2 connection state is large, and an HTTP/1.1 connection's future would
            // otherwise be sized for it.
            true => Either::Left(watchdog::guard(
                Box::pin(h2_conn(Handed::new(bytes::Bytes::new(), Box::new(io)))),
                state,
                limits,
            )),
            false => {
                let conn = Conn {
                    info,
                    shared,
                    state: state.clone(),
                    stop,
                };
                Either::Right(watchdog::guard(conn.serve(io, h2_conn), state, limits))
            }
        };
        served.map(move |served| {
            if served.is_none() {
                tracing::debug!(%peer, "closed: no request head within client_header_timeout")
            }
            drop(guard);
        })
    }
}

/// An h2 connection, served by hyper until it closes (the worker's graceful shutdown drains it) and its
/// streams have ended.
///
/// Its streams' futures run in this task, beside hyper's connection future ([`Local`]), not as tasks of
/// their own: a stream that finishes its answer gets it written in the same turn, instead of after every
/// task the worker woke meanwhile (the response half of the convoy [`sluice_upstream::h2`] describes for
/// the upstream side), and a call costs no spawn.
async fn serve_h2(
    io: Handed,
    graceful: Watcher,
    info: Arc<ConnInfo>,
    shared: Arc<Shared>,
    state: Arc<ConnState>,
) {
    let body_timeout = shared.settings.client_body_timeout;
    let send_timeout = shared.settings.send_timeout;
    let service = service_fn(move |req: http::Request<hyper::body::Incoming>| {
        Counters::bump(&shared.counters.requests);
        let in_flight = state.request_started();
        // `map`, not an async block: a block would hold the request's future twice (captured, then
        // moved into its await slot), and hyper moves this future into place per request.
        handler::handle(
            req.map(|body| ClientBody::h2(body, body_timeout)),
            info.clone(),
            shared.clone(),
            in_flight,
        )
        .map(|reply| Ok::<_, Infallible>(reply.into_response()))
    });
    let streams = Local::new();
    let builder = h2_builder(send_timeout, streams.clone());
    let conn = graceful.watch(builder.serve_connection(TokioIo::new(io), service));
    hyper::rt::Executor::execute(&streams, async move {
        if let Err(e) = conn.await {
            tracing::debug!(error = %e, "downstream h2 connection ended with an error")
        }
    });
    streams.run().await;
}
