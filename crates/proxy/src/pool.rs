//! Per-worker pools of upstream HTTP/1.1 connections.
//!
//! Each worker thread keeps its own idle connections per target address (a thread-local: workers never
//! share a lock). A connection goes back to the pool when its response body has been read to the end
//! ([`crate::body::PooledBody`]); a body dropped early takes its connection with it. Connecting is separate
//! from sending, so the caller knows a failure happened before any byte of the request left, which is when
//! retrying is safe.

use crate::body::ProxyBody;
use crate::error::ProxyError;
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use rustc_hash::FxHashMap;
use std::cell::RefCell;
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

struct Idle {
    sender: SendRequest<ProxyBody>,
    since: Instant,
}

struct Pool {
    /// Keyed with a fast non-DoS-resistant hash: the keys are the config's own target addresses.
    idle: FxHashMap<SocketAddr, VecDeque<Idle>>,
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
    pub addr: SocketAddr,
    pub reused: bool,
}

/// An idle pooled connection to `addr`, or a new one (502 when refused, 504 on connect timeout).
pub async fn checkout(addr: SocketAddr, connect_timeout: Duration) -> Result<Conn, ProxyError> {
    if let Some(sender) = take_idle(addr) {
        return Ok(Conn {
            sender,
            addr,
            reused: true,
        });
    }
    let connecting = tokio::net::TcpStream::connect(addr);
    let stream = match tokio::time::timeout(connect_timeout, connecting).await {
        Err(_) => return Err(ProxyError::Timeout),
        Ok(Err(e)) => {
            tracing::debug!(%addr, error = %e, "upstream connect failed");
            return Err(ProxyError::BadGateway);
        }
        Ok(Ok(s)) => s,
    };
    let _ = stream.set_nodelay(true);
    let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|_| ProxyError::BadGateway)?;
    tokio::spawn(async move {
        if let Err(e) = conn.await {
            tracing::debug!(error = %e, "upstream connection ended");
        }
    });
    Ok(Conn {
        sender,
        addr,
        reused: false,
    })
}

fn take_idle(addr: SocketAddr) -> Option<SendRequest<ProxyBody>> {
    POOL.with(|p| {
        let mut p = p.borrow_mut();
        let timeout = p.idle_timeout;
        let queue = p.idle.get_mut(&addr)?;
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
pub fn checkin(addr: SocketAddr, sender: SendRequest<ProxyBody>) {
    if sender.is_closed() {
        return;
    }
    POOL.with(|p| {
        let mut p = p.borrow_mut();
        let (max, timeout) = (p.max_idle, p.idle_timeout);
        let queue = p.idle.entry(addr).or_default();
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
pub fn idle_count(addr: SocketAddr) -> usize {
    POOL.with(|p| p.borrow().idle.get(&addr).map_or(0, VecDeque::len))
}

#[cfg(test)]
mod tests;
