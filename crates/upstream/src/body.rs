//! Body types of the proxy: the one boxed type that goes upstream and to the client, and the body that
//! feeds plugin-filtered bodies through a channel, and a client body capped at a size ([`Capped`]). The body read from an upstream connection, which returns
//! the connection to the pool and enforces the read timeout between reads, is [`crate::pooled`].

use bytes::Bytes;
use http_body::{Body, Frame};
use http_body_util::combinators::BoxBody;
use http_body_util::BodyExt;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::sync::mpsc;

/// Errors boxed for bodies.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// The body type sent upstream and to the client.
pub type ProxyBody = BoxBody<Bytes, BoxError>;

/// Boxes a body error (a named function: closures here trip higher-ranked lifetime inference).
pub fn box_err<E: std::error::Error + Send + Sync + 'static>(e: E) -> BoxError {
    Box::new(e)
}

/// A body with all of `bytes`.
pub fn full(bytes: Bytes) -> ProxyBody {
    http_body_util::Full::new(bytes).map_err(box_err).boxed()
}

/// A body fed by a task through a channel (the plugin path: body_filter runs in the task).
pub struct ChannelBody {
    rx: mpsc::Receiver<Result<Frame<Bytes>, BoxError>>,
}

impl ChannelBody {
    /// A body and the sender that feeds it; the body ends when the sender is dropped.
    pub fn channel() -> (mpsc::Sender<Result<Frame<Bytes>, BoxError>>, ChannelBody) {
        let (tx, rx) = mpsc::channel(4);
        (tx, ChannelBody { rx })
    }
}

impl Body for ChannelBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        self.rx.poll_recv(cx)
    }
}

/// A client body that may not pass `left` bytes: past it, it ends with the error [`OverLimit`], which the
/// upstream writer reports as [`crate::conn::Failed::OverLimit`] (request-size-limiting counts a body
/// without a length this way while it streams, instead of holding it).
pub struct Capped {
    inner: ProxyBody,
    left: u64,
    /// The node's `client_max_body_size` (ends with [`TooLarge`]), not a plugin's cap.
    node: bool,
}

impl Capped {
    /// A plugin's cap (request-size-limiting).
    pub fn new(inner: ProxyBody, limit: u64) -> Capped {
        Capped {
            inner,
            left: limit,
            node: false,
        }
    }

    /// The node's `client_max_body_size` on a body streamed without a length: past it, the body ends
    /// with [`TooLarge`] (413).
    pub fn node_limit(inner: ProxyBody, limit: u64) -> Capped {
        Capped {
            node: true,
            ..Capped::new(inner, limit)
        }
    }
}

/// The error a [`Capped::node_limit`] body ends with once it passed `client_max_body_size`.
#[derive(Debug)]
pub struct TooLarge;

impl std::fmt::Display for TooLarge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("request body over client_max_body_size")
    }
}

impl std::error::Error for TooLarge {}

/// The error a [`Capped`] body ends with once it passed its limit.
#[derive(Debug)]
pub struct OverLimit;

impl std::fmt::Display for OverLimit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("request body over its size limit")
    }
}

impl std::error::Error for OverLimit {}

/// Why a client's request body ended when the client sent nothing for longer than the body timeout
/// (nginx's `client_body_timeout`): the client side's body error carries it as its source, and the upstream
/// writer reports it as [`crate::conn::Failed::ClientTimeout`] (the gateway answers 408).
#[derive(Debug)]
pub struct ClientTimedOut;

impl std::fmt::Display for ClientTimedOut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the client sent no body bytes within client_body_timeout")
    }
}

impl std::error::Error for ClientTimedOut {}

/// Whether a body error is, or was caused by, [`ClientTimedOut`] (body wrappers box the client's error,
/// so its sources are walked).
pub fn is_client_timeout(e: &(dyn std::error::Error + 'static)) -> bool {
    std::iter::successors(Some(e), |e| e.source()).any(|e| e.is::<ClientTimedOut>())
}

impl Body for Capped {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        if let Poll::Ready(Some(Ok(frame))) = &polled {
            let len = frame.data_ref().map_or(0, |d| d.len() as u64);
            match self.left.checked_sub(len) {
                Some(left) => self.left = left,
                None if self.node => return Poll::Ready(Some(Err(Box::new(TooLarge)))),
                None => return Poll::Ready(Some(Err(Box::new(OverLimit)))),
            }
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}
