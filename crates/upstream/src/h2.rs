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

use crate::body::ProxyBody;
use crate::conn::{server_name, PoolKey, TlsTarget};
use crate::error::UpstreamError;
use hyper::client::conn::http2::{self, SendRequest};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use rustc_hash::FxHashMap;
use sluice_tls::rustls::ClientConfig;
use std::cell::RefCell;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpStream;
use tokio::sync::OnceCell;

/// The handle a request sends its stream on (cheap to clone: the connection is shared).
pub type Sender = SendRequest<ProxyBody>;

/// A target's connection, made once however many calls ask for it at the same time.
type Slot = Arc<OnceCell<Sender>>;

thread_local! {
    static CONNS: RefCell<FxHashMap<PoolKey, Slot>> = RefCell::new(FxHashMap::default());
    /// The services' TLS configs with ALPN `h2`, by their settings' key.
    static ALPN: RefCell<FxHashMap<u64, Arc<ClientConfig>>> = RefCell::new(FxHashMap::default());
}

/// An open HTTP/2 connection to `key`'s target: this worker's, or a new one within `connect_timeout`
/// (TCP, TLS and the HTTP/2 preface together; 504 past it, 502 when refused or the handshake fails).
/// Calls that arrive while it is being made wait for it instead of opening their own; when making it
/// fails, the next waiting call tries again.
pub async fn sender(
    key: PoolKey,
    tls: Option<TlsTarget<'_>>,
    connect_timeout: Duration,
) -> Result<Sender, UpstreamError> {
    let slot = CONNS.with(|c| {
        let mut c = c.borrow_mut();
        let slot = c.entry(key).or_default();
        if slot.get().is_some_and(|s| s.is_closed()) {
            *slot = Slot::default();
        }
        slot.clone()
    });
    let made = slot.get_or_try_init(|| async {
        match tokio::time::timeout(connect_timeout, Box::pin(connect(key, tls))).await {
            Err(_) => Err(UpstreamError::Timeout),
            Ok(result) => result,
        }
    });
    made.await.cloned()
}

/// A new HTTP/2 connection to `key`'s target, in no map: TCP, TLS with ALPN `h2` when `tls` is given,
/// and the preface, with no deadline of its own (callers bound it). A task drives the connection until
/// it closes, which it does once every [`Sender`] of it is dropped and its streams are done. [`sender`]
/// makes the workers' shared connections with it; an active health probe (`type: grpc`), one per probe.
pub async fn connect(key: PoolKey, tls: Option<TlsTarget<'_>>) -> Result<Sender, UpstreamError> {
    let addr = key.addr;
    let refused = |e: &dyn std::fmt::Display| {
        tracing::debug!(%addr, error = %e, "upstream h2 connect failed");
        UpstreamError::Connect
    };
    let tcp = TcpStream::connect(addr).await.map_err(|e| refused(&e))?;
    let _ = tcp.set_nodelay(true);
    let mut builder = http2::Builder::new(TokioExecutor::new());
    builder
        .timer(TokioTimer::new())
        .keep_alive_interval(Some(Duration::from_secs(30)))
        .adaptive_window(true);
    let Some(t) = tls else {
        let (sender, conn) = builder
            .handshake(TokioIo::new(tcp))
            .await
            .map_err(|e| refused(&e))?;
        tokio::spawn(drive(conn));
        return Ok(sender);
    };
    let config = alpn_h2(t.tls.key, &t.tls.config);
    let connector = tokio_rustls::TlsConnector::from(config);
    let stream = connector
        .connect(server_name(t.server_name, addr), tcp)
        .await
        .map_err(|e| refused(&e))?;
    let (sender, conn) = builder
        .handshake(TokioIo::new(stream))
        .await
        .map_err(|e| refused(&e))?;
    tokio::spawn(drive(conn));
    Ok(sender)
}

/// Runs a connection until it closes (its streams are served while this future is polled).
async fn drive<F: std::future::Future<Output = hyper::Result<()>>>(conn: F) {
    if let Err(e) = conn.await {
        tracing::debug!(error = %e, "upstream h2 connection closed");
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
