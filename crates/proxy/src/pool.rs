//! Per-worker pools of upstream HTTP/1.1 connections.
//!
//! Each worker thread keeps its own idle connections per target address (a thread-local: workers never
//! share a lock). A connection goes back to the pool when its response body has been read to the end
//! ([`PooledBody`]); a body dropped early takes its connection with it. Connecting is separate from sending,
//! so the caller knows a failure happened before any byte of the request left, which is when retrying is safe.

use crate::error::ProxyError;
use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use http_body_util::combinators::BoxBody;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

/// Errors boxed for bodies.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Boxes a body error (a named function: closures here trip higher-ranked lifetime inference).
pub fn box_err<E: std::error::Error + Send + Sync + 'static>(e: E) -> BoxError {
    Box::new(e)
}

/// A body with all of `bytes`.
pub fn full_body(bytes: Bytes) -> UpstreamBody {
    http_body_util::Full::new(bytes).map_err(box_err).boxed()
}

/// The body type sent upstream.
pub type UpstreamBody = BoxBody<Bytes, BoxError>;

struct Idle {
    sender: SendRequest<UpstreamBody>,
    since: Instant,
}

struct Pool {
    idle: HashMap<SocketAddr, VecDeque<Idle>>,
    max_idle: usize,
    idle_timeout: Duration,
}

thread_local! {
    static POOL: RefCell<Pool> = RefCell::new(Pool {
        idle: HashMap::new(),
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
    pub sender: SendRequest<UpstreamBody>,
    pub addr: SocketAddr,
    pub reused: bool,
}

/// An idle pooled connection to `addr`, or a new one.
pub async fn checkout(addr: SocketAddr, connect_timeout: Duration) -> Result<Conn, ProxyError> {
    if let Some(sender) = take_idle(addr) {
        return Ok(Conn {
            sender,
            addr,
            reused: true,
        });
    }
    let stream =
        match tokio::time::timeout(connect_timeout, tokio::net::TcpStream::connect(addr)).await {
            Err(_) => return Err(ProxyError::Timeout),
            Ok(Err(_)) => return Err(ProxyError::BadGateway),
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

fn take_idle(addr: SocketAddr) -> Option<SendRequest<UpstreamBody>> {
    POOL.with(|p| {
        let mut p = p.borrow_mut();
        let timeout = p.idle_timeout;
        let queue = p.idle.get_mut(&addr)?;
        while let Some(idle) = queue.pop_back() {
            if idle.since.elapsed() < timeout && idle.sender.is_ready() && !idle.sender.is_closed()
            {
                return Some(idle.sender);
            }
        }
        None
    })
}

fn checkin(addr: SocketAddr, sender: SendRequest<UpstreamBody>) {
    if sender.is_closed() {
        return;
    }
    POOL.with(|p| {
        let mut p = p.borrow_mut();
        let max = p.max_idle;
        let queue = p.idle.entry(addr).or_default();
        if queue.len() < max {
            queue.push_back(Idle {
                sender,
                since: Instant::now(),
            });
        }
    });
}

/// An upstream response body that returns its connection to the pool once read to the end.
pub struct PooledBody {
    inner: Incoming,
    conn: Option<(SocketAddr, SendRequest<UpstreamBody>)>,
}

impl PooledBody {
    /// `reusable` is false when the response said `Connection: close`.
    pub fn new(inner: Incoming, conn: Conn, reusable: bool) -> Self {
        let mut body = PooledBody {
            inner,
            conn: reusable.then_some((conn.addr, conn.sender)),
        };
        if body.inner.is_end_stream() {
            // An empty body may never be polled: the connection is free already.
            body.release();
        }
        body
    }

    fn release(&mut self) {
        if let Some((addr, sender)) = self.conn.take() {
            checkin(addr, sender);
        }
    }
}

impl Body for PooledBody {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        match &polled {
            Poll::Ready(None) => self.release(),
            Poll::Ready(Some(Ok(_))) if self.inner.is_end_stream() => self.release(),
            Poll::Ready(Some(Err(_))) => self.conn = None,
            _ => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
