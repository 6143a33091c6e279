//! Body types of the proxy: what goes upstream, what goes to the client, and the wrappers that return
//! upstream connections to the pool, enforce the read timeout between chunks, and feed plugin-filtered
//! bodies through a channel.

use crate::error::ProxyError;
use crate::pool::PoolKey;
use crate::pool::{self, Conn};
use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use http_body_util::combinators::BoxBody;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::client::conn::http1::SendRequest;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;
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

/// An upstream response body: returns its connection to the pool once read to the end, and fails when the
/// upstream is silent for longer than the read timeout between two chunks.
pub struct PooledBody {
    inner: Incoming,
    conn: Option<(PoolKey, SendRequest<ProxyBody>)>,
    read_timeout: Duration,
    timer: Option<Pin<Box<tokio::time::Sleep>>>,
    armed: bool,
}

impl PooledBody {
    /// `reusable` is false when the response said `Connection: close`.
    pub fn new(inner: Incoming, conn: Conn, reusable: bool, read_timeout: Duration) -> Self {
        let mut body = PooledBody {
            inner,
            conn: reusable.then_some((conn.key, conn.sender)),
            read_timeout,
            timer: None,
            armed: false,
        };
        if body.inner.is_end_stream() {
            // An empty body may never be polled: the connection is free already.
            body.release();
        }
        body
    }

    fn release(&mut self) {
        if let Some((key, sender)) = self.conn.take() {
            pool::checkin(key, sender);
        }
    }

    /// Arms the read timer when the upstream has nothing yet; true when it has expired.
    fn timed_out(&mut self, cx: &mut Context<'_>) -> bool {
        let deadline = tokio::time::Instant::now() + self.read_timeout;
        if !self.armed {
            match &mut self.timer {
                Some(t) => t.as_mut().reset(deadline),
                None => self.timer = Some(Box::pin(tokio::time::sleep_until(deadline))),
            }
            self.armed = true;
        }
        self.timer
            .as_mut()
            .is_some_and(|t| t.as_mut().poll(cx).is_ready())
    }
}

impl Body for PooledBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        match polled {
            Poll::Pending => {
                if self.timed_out(cx) {
                    self.conn = None;
                    return Poll::Ready(Some(Err(box_err(ProxyError::Timeout))));
                }
                Poll::Pending
            }
            Poll::Ready(frame) => {
                self.armed = false;
                match &frame {
                    None => self.release(),
                    Some(Ok(_)) if self.inner.is_end_stream() => self.release(),
                    Some(Err(_)) => self.conn = None,
                    Some(Ok(_)) => {}
                }
                Poll::Ready(frame.map(|f| f.map_err(box_err)))
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
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
