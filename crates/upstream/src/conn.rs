//! One upstream HTTP/1.1 connection, driven inside the request's own task: no connection task, no
//! dispatch channel. A request is written as bytes ([`crate::wire`], sent by [`send`]), the response head is
//! read and parsed here ([`sluice_h1`]), and the body is read by [`crate::pooled::PooledBody`], which
//! returns the connection to the pool when the body ends on a message boundary. The plain or TLS byte
//! stream is [`stream`].

mod deadline;
mod send;
mod stream;

pub use deadline::{Deadline, Expired};
pub(crate) use send::client_failed;
pub use stream::Stream;

use crate::error::UpstreamError;
use crate::tls::UpstreamTls;
use bytes::BytesMut;
use sluice_h1::{ResponseHead, MAX_HEAD_BYTES};
use sluice_tls::rustls::pki_types::ServerName;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Bytes read from the upstream per read call, at most (the buffer grows by this much when it is short).
const READ_CHUNK: usize = 16 * 1024;

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

/// An upstream connection: its stream, what has been read from it and not consumed yet, and its pool key.
pub struct Conn {
    pub stream: Stream,
    pub buf: BytesMut,
    pub key: PoolKey,
    /// Exchanges finished on it, counted when it goes back to the pool (checked against
    /// `upstream_keepalive_max_requests` there); more than none means it came from the pool.
    pub(crate) served: u32,
    /// The request on it asked for an upgrade, so a 101 is its answer rather than an error. A connection
    /// that switched protocols belongs to its tunnel ([`crate::tunnel`]) and never goes back to the pool.
    pub upgrade: bool,
    /// The timer every body-less exchange on it is bounded by (taken out for the exchange, which
    /// borrows the connection, and put back).
    pub deadline: Deadline,
}

/// Why an exchange failed, as far as retrying cares.
#[derive(Debug, PartialEq, Eq)]
pub enum Failed {
    /// No byte of an answer came back: the write failed, or the connection closed or reset first.
    NoAnswer,
    /// The upstream's answer is not a well-formed HTTP/1.x response head.
    Malformed,
    /// The client's request body failed while it was being forwarded.
    ClientBody,
    /// The client's request body passed the size it was capped at ([`crate::body::Capped`]).
    OverLimit,
    /// The client's request body passed the node's `client_max_body_size` ([`crate::body::TooLarge`]).
    TooLarge,
    /// The client sent no body bytes within the client body timeout ([`crate::body::ClientTimedOut`]).
    ClientTimeout,
    /// No progress within the timeout: a write to the upstream, or the client's next body bytes
    /// (nginx's `proxy_send_timeout` between two writes; `proxy_read_timeout` between two reads).
    Stalled,
}

/// A deadline that moves on with progress: armed once, reset after each step that got somewhere, so it
/// bounds the gap between two steps (nginx's send and read timeouts), not the whole transfer.
pub struct Gap {
    every: std::time::Duration,
    timer: Pin<Box<tokio::time::Sleep>>,
}

impl Gap {
    pub fn new(every: std::time::Duration) -> Gap {
        Gap {
            every,
            timer: Box::pin(tokio::time::sleep(every)),
        }
    }

    /// Runs `step`, failing with [`Failed::Stalled`] when it takes longer than the gap; the gap starts
    /// again after it.
    async fn step<T>(
        &mut self,
        step: impl std::future::Future<Output = Result<T, Failed>>,
    ) -> Result<T, Failed> {
        let out = tokio::select! {
            out = step => out,
            () = &mut self.timer => return Err(Failed::Stalled),
        };
        let next = tokio::time::Instant::now() + self.every;
        self.timer.as_mut().reset(next);
        out
    }
}

impl Conn {
    /// A new connection, TLS when asked (502 when refused or the handshake fails).
    pub async fn connect(key: PoolKey, tls: Option<TlsTarget<'_>>) -> Result<Conn, UpstreamError> {
        let addr = key.addr;
        let tcp = TcpStream::connect(addr).await.map_err(|e| {
            tracing::debug!(%addr, error = %e, "upstream connect failed");
            UpstreamError::Connect
        })?;
        let _ = tcp.set_nodelay(true);
        let stream = match tls {
            None => Stream::Plain(tcp),
            Some(t) => {
                let name = server_name(t.server_name, addr);
                let connector = tokio_rustls::TlsConnector::from(t.tls.config.clone());
                let tls = connector.connect(name, tcp).await.map_err(|e| {
                    tracing::warn!(%addr, server_name = t.server_name, error = %e, "upstream TLS handshake failed");
                    UpstreamError::Connect
                })?;
                Stream::Tls(Box::new(tls))
            }
        };
        Ok(Conn {
            stream,
            buf: BytesMut::new(),
            key,
            served: 0,
            upgrade: false,
            deadline: Deadline::default(),
        })
    }

    /// It came from the pool (the upstream may have closed it while it was idle).
    pub fn reused(&self) -> bool {
        self.served > 0
    }

    /// Whether an idle connection can carry a request: nothing arrived while it sat in the pool, neither
    /// the upstream closing it nor stray bytes. Costs a syscall only when the socket was marked readable.
    pub fn is_idle_clean(&mut self) -> bool {
        if !self.buf.is_empty() {
            return false;
        }
        let tcp = match &self.stream {
            Stream::Plain(s) => s,
            Stream::Tls(s) => s.get_ref().0,
        };
        let mut cx = Context::from_waker(Waker::noop());
        if tcp.poll_read_ready(&mut cx).is_pending() {
            return true;
        }
        let mut probe = [0u8; 1];
        matches!(tcp.try_read(&mut probe), Err(e) if e.kind() == io::ErrorKind::WouldBlock)
    }

    async fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.stream.write_all(bytes).await
    }

    async fn write_all_vectored(&mut self, bufs: &mut [std::io::IoSlice<'_>]) -> io::Result<()> {
        send::write_all_vectored(&mut self.stream, bufs).await
    }

    async fn flush(&mut self) -> io::Result<()> {
        self.stream.flush().await
    }

    /// Sends a body-less request head as it is and reads the response head (health probes).
    pub async fn exchange_head(
        &mut self,
        head: &[u8],
        head_request: bool,
    ) -> Result<ResponseHead, Failed> {
        self.write_all(head).await.map_err(no_answer)?;
        self.flush().await.map_err(no_answer)?;
        self.read_head(head_request).await
    }

    /// Reads the response head, skipping interim (1xx) responses. `head_request`: a HEAD request's answer
    /// has no body whatever its headers say.
    pub async fn read_head(&mut self, head_request: bool) -> Result<ResponseHead, Failed> {
        self.read_head_gapped(head_request, None).await
    }

    /// [`Conn::read_head`] with each read bounded by `gap` when given (nginx's `proxy_read_timeout`
    /// between two reads: a head that keeps arriving is waited for).
    pub async fn read_head_gapped(
        &mut self,
        head_request: bool,
        mut gap: Option<Gap>,
    ) -> Result<ResponseHead, Failed> {
        let mut received = false;
        loop {
            match sluice_h1::parse_response(&mut self.buf, head_request) {
                Ok(Some(head)) if head.status.is_informational() => {
                    if head.status == http::StatusCode::SWITCHING_PROTOCOLS {
                        // Bytes after it are the new protocol's: they stay in `buf` for the tunnel.
                        return match self.upgrade {
                            true => Ok(head),
                            false => Err(Failed::Malformed),
                        };
                    }
                    received = true;
                }
                Ok(Some(head)) => return Ok(head),
                Ok(None) if self.buf.len() >= MAX_HEAD_BYTES => return Err(Failed::Malformed),
                Ok(None) => {
                    received |= !self.buf.is_empty();
                    let n = match gap.as_mut() {
                        Some(g) => g.step(async { Ok(self.read_more().await) }).await?,
                        None => self.read_more().await,
                    };
                    match n {
                        Ok(0) | Err(_) if !received => return Err(Failed::NoAnswer),
                        Ok(0) | Err(_) => return Err(Failed::Malformed),
                        Ok(_) => {}
                    }
                }
                Err(e) => {
                    tracing::debug!(error = %e, "malformed upstream response head");
                    return Err(Failed::Malformed);
                }
            }
        }
    }

    async fn read_more(&mut self) -> io::Result<usize> {
        reserve(&mut self.buf, UPSTREAM_MIN_SPARE);
        self.stream.read_buf(&mut self.buf).await
    }

    /// Reads what is available into the buffer (for the body, which hyper polls).
    pub fn poll_read_more(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        poll_read_into(cx, &mut self.stream, &mut self.buf, UPSTREAM_MIN_SPARE)
    }
}

/// The room an upstream read wants before it reads: an upstream's responses are often large.
const UPSTREAM_MIN_SPARE: usize = READ_CHUNK / 4;

/// One read from `io` into `buf`'s spare room, [`READ_CHUNK`] more made first when under `min_spare`: the
/// connection's read step, for the upstream's connections and the client's alike. The client's side asks
/// for little room: its next head usually fits what is left of its 4 KiB buffer, and a fresh 16 KiB per
/// request cost the own server +3% instructions per request.
pub fn poll_read_into<IO: AsyncRead + Unpin>(
    cx: &mut Context<'_>,
    io: &mut IO,
    buf: &mut BytesMut,
    min_spare: usize,
) -> Poll<io::Result<usize>> {
    reserve(buf, min_spare);
    // The future holds no state of its own: polling a fresh one each time loses nothing.
    let read = std::pin::pin!(io.read_buf(buf));
    read.poll(cx)
}

fn reserve(buf: &mut BytesMut, min_spare: usize) {
    if buf.capacity() - buf.len() < min_spare {
        buf.reserve(READ_CHUNK);
    }
}

fn no_answer(e: io::Error) -> Failed {
    tracing::debug!(error = %e, "upstream write failed");
    Failed::NoAnswer
}

/// The name sent as SNI and verified: a DNS name, an IP address (no SNI is sent), or the address itself
/// when the Host header is unusable.
pub(crate) fn server_name(name: &str, addr: SocketAddr) -> ServerName<'static> {
    let bare = name.trim_start_matches('[').trim_end_matches(']');
    match bare.parse::<std::net::IpAddr>() {
        Ok(ip) => ServerName::IpAddress(ip.into()),
        Err(_) => ServerName::try_from(bare.to_string())
            .unwrap_or_else(|_| ServerName::IpAddress(addr.ip().into())),
    }
}
