//! The client side of HTTP/1.1: Sluice's own server loop, in place of hyper's, for what a gateway needs
//! from it and no more (HTTP/2 stays with hyper, which the worker hands h2 connections to).
//!
//! Why its own: per request, hyper's server dispatch, its body channel and its connection state cost more
//! instructions than the rest of the proxy's fast path, and an idle keep-alive connection kept hyper's
//! read and write buffers (~25 KB). Here, in request order:
//! 1. [`conn`] reads a head into a buffer taken when bytes arrive and given back when the client goes quiet
//!    (to the worker's [`spare`]s),
//!    parsed by `sluice_h1::parse_request` (nginx's refusals: 400 and 501);
//! 2. the request body ([`body::ClientBody`]) is empty, whole from the buffer, or fed by the connection
//!    task while the driver runs ([`feed`]: one piece per want, `100 Continue` before the first read);
//! 3. the driver ([`crate::handler::handle`]) answers;
//! 4. [`write`] puts the head and the body on the wire, coalesced (a fast-path head's upstream fields
//!    straight from the bytes they came in, [`upstream_fields`]);
//! 5. what is left of an unread body is discarded when short (else the connection closes), and the next
//!    head is read; pipelined bytes are already in the buffer.
//!
//! A 101 hands the socket and the bytes read ahead to the upgrade ([`handover`]).

mod body;
mod conn;
mod feed;
mod handover;
mod spare;
mod stall;
pub(crate) mod upstream_fields;
mod write;

pub use body::ClientBody;
pub use conn::Conn;
pub use handover::{Handed, OwnUpgrade};

/// A client read makes more room (16 KiB) only when less than this is left: the next head nearly always
/// fits what is left of the first 4 KiB, and a fresh buffer per request costs an allocation.
const CLIENT_MIN_SPARE: usize = 1024;

use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;

/// A client transport the loop serves: plain TCP or TLS over it.
pub trait Transport: AsyncRead + AsyncWrite + Unpin + Send + 'static {
    /// Ready when a read would find bytes (or the end). Only called after a read found none, so the
    /// socket's readiness was cleared and what wakes this is real.
    fn poll_ready_to_read(&self, cx: &mut Context<'_>) -> Poll<()>;
}

impl Transport for TcpStream {
    fn poll_ready_to_read(&self, cx: &mut Context<'_>) -> Poll<()> {
        self.poll_read_ready(cx).map(|_| ())
    }
}

impl Transport for tokio_rustls::server::TlsStream<TcpStream> {
    fn poll_ready_to_read(&self, cx: &mut Context<'_>) -> Poll<()> {
        let (tcp, tls) = self.get_ref();
        // Decrypted bytes waiting inside rustls count as readable.
        match tls.wants_read() {
            false => Poll::Ready(()),
            true => tcp.poll_read_ready(cx).map(|_| ()),
        }
    }
}
