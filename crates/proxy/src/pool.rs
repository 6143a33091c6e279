//! Per-worker pools of upstream HTTP/1.1 connections.
//!
//! Each worker thread keeps its own idle connections per target address (a thread-local: workers never
//! share a lock). A connection goes back to the pool when its response body has been read to the end
//! ([`crate::body::PooledBody`]); a body dropped early takes its connection with it. Connecting is separate
//! from sending, so the caller knows a failure happened before any byte of the request left, which is when
//! retrying is safe.

use crate::body::ProxyBody;
use crate::error::ProxyError;
use crate::tls::UpstreamTls;
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use rustc_hash::FxHashMap;
use sluice_tls::rustls::pki_types::ServerName;
use std::cell::RefCell;
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

struct Idle {
    sender: SendRequest<ProxyBody>,
    since: Instant,
}

/// Which idle connections can serve a request: same address, and for TLS the same settings and server
/// name (`tls` is 0 for plain text, else [`crate::tls::pool_key`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PoolKey {
    pub addr: SocketAddr,
    pub tls: u64,
}

/// TLS to use for a new connection: the service's settings and the server name to send and verify.
pub struct TlsTarget<'a> {
    pub tls: &'a UpstreamTls,
    pub server_name: &'a str,
}

struct Pool {
    /// Keyed with a fast non-DoS-resistant hash: the keys are the config's own target addresses.
    idle: FxHashMap<PoolKey, VecDeque<Idle>>,
    max_idle: usize,
    idle_timeout: Duration,
}

thread_local! {
    static POOL: RefCell<Pool> = RefCell::new(Pool {
        idle: FxHashMap::default(),
        max_idle: 256,
        idle_timeout: Duration::from_secs(60),
    });
}

/// Sets this worker's pool limits (called once when the worker starts).
pub fn configure(max_idle: usize, idle_timeout: Duration) {
    POOL.with(|p| {
        let mut p = p.borrow_mut();
        p.max_idle = max_idle;
        p.idle_timeout = idle_timeout;
    });
}

/// A connection ready to send one request; `reused` tells whether it came from the pool (a reused
/// connection may have been closed by the upstream meanwhile).
pub struct Conn {
    pub sender: SendRequest<ProxyBody>,
    pub key: PoolKey,
    pub reused: bool,
}

/// An idle pooled connection for `key`, or a new one (502 when refused or the TLS handshake fails, 504 on
/// connect timeout; `connect_timeout` covers the TCP connect and the TLS handshake together).
pub async fn checkout(
    key: PoolKey,
    tls: Option<TlsTarget<'_>>,
    connect_timeout: Duration,
) -> Result<Conn, ProxyError> {
    let idle = take_idle(key);
    crate::metrics::count_checkout(idle.is_some());
    if let Some(sender) = idle {
        return Ok(Conn {
            sender,
            key,
            reused: true,
        });
    }
    let sender = match tokio::time::timeout(connect_timeout, connect(key.addr, tls)).await {
        Err(_) => return Err(ProxyError::Timeout),
        Ok(result) => result?,
    };
    Ok(Conn {
        sender,
        key,
        reused: false,
    })
}

/// A new connection, TLS when asked, with its HTTP/1.1 driver task spawned.
async fn connect(
    addr: SocketAddr,
    tls: Option<TlsTarget<'_>>,
) -> Result<SendRequest<ProxyBody>, ProxyError> {
    let stream = tokio::net::TcpStream::connect(addr).await.map_err(|e| {
        tracing::debug!(%addr, error = %e, "upstream connect failed");
        ProxyError::BadGateway
    })?;
    let _ = stream.set_nodelay(true);
    match tls {
        None => handshake(TokioIo::new(stream)).await,
        Some(t) => {
            let name = server_name(t.server_name, addr);
            let connector = tokio_rustls::TlsConnector::from(t.tls.config.clone());
            let stream = connector.connect(name, stream).await.map_err(|e| {
                tracing::warn!(%addr, server_name = t.server_name, error = %e, "upstream TLS handshake failed");
                ProxyError::BadGateway
            })?;
            handshake(TokioIo::new(stream)).await
        }
    }
}

async fn handshake<IO>(io: IO) -> Result<SendRequest<ProxyBody>, ProxyError>
where
    IO: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let (sender, conn) = hyper::client::conn::http1::handshake(io)
        .await
        .map_err(|_| ProxyError::BadGateway)?;
    tokio::spawn(async move {
        if let Err(e) = conn.await {
            tracing::debug!(error = %e, "upstream connection ended");
        }
    });
    Ok(sender)
}

/// The name sent as SNI and verified: a DNS name, an IP address (no SNI is sent), or the address itself
/// when the Host header is unusable.
fn server_name(name: &str, addr: SocketAddr) -> ServerName<'static> {
    let bare = name.trim_start_matches('[').trim_end_matches(']');
    match bare.parse::<std::net::IpAddr>() {
        Ok(ip) => ServerName::IpAddress(ip.into()),
        Err(_) => ServerName::try_from(bare.to_string())
            .unwrap_or_else(|_| ServerName::IpAddress(addr.ip().into())),
    }
}

fn take_idle(key: PoolKey) -> Option<SendRequest<ProxyBody>> {
    POOL.with(|p| {
        let mut p = p.borrow_mut();
        let timeout = p.idle_timeout;
        let queue = p.idle.get_mut(&key)?;
        while let Some(idle) = queue.pop_back() {
            if idle.since.elapsed() < timeout && idle.sender.is_ready() {
                return Some(idle.sender);
            }
        }
        None
    })
}

/// Returns a connection whose exchange finished cleanly. The oldest idle connections of that address
/// are dropped when past the idle timeout or over the cap.
pub fn checkin(key: PoolKey, sender: SendRequest<ProxyBody>) {
    if sender.is_closed() {
        return;
    }
    POOL.with(|p| {
        let mut p = p.borrow_mut();
        let (max, timeout) = (p.max_idle, p.idle_timeout);
        let queue = p.idle.entry(key).or_default();
        while queue
            .front()
            .is_some_and(|i| i.since.elapsed() >= timeout || i.sender.is_closed())
        {
            queue.pop_front();
        }
        if queue.len() >= max {
            queue.pop_front();
        }
        if max > 0 {
            queue.push_back(Idle {
                sender,
                since: Instant::now(),
            });
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
