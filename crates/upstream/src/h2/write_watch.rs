//! The service's `write_timeout` on an HTTP/2 call (nginx's `grpc_send_timeout`: between two writes of
//! the request to the upstream). hyper pipes the request body into the stream itself and asks the body for
//! its next frame only once the stream can take more (HTTP/2 flow control, and the send buffer behind it).
//! So the wait that matters is the one after the body handed hyper a frame: [`watch`] wraps the body to
//! stamp that moment, and the call's [`WriteWatch`] fires when hyper has not come back for `write_timeout`
//! since. A body that is waiting on the client is not a stalled write, and neither is one that has ended.

use super::{instant_of, now_ms};
use crate::body::{BoxError, ProxyBody};
use http_body::{Body, Frame};
use http_body_util::BodyExt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::time::Sleep;

/// Nothing handed over is waiting to be taken.
const IDLE: u64 = 0;
/// The body has ended: nothing more will be written.
const DONE: u64 = u64::MAX;

/// The request body of a watched call: stamps when it hands a frame to hyper, clears it when asked again.
struct Watched {
    inner: ProxyBody,
    handed: Arc<AtomicU64>,
}

impl Body for Watched {
    type Data = bytes::Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<bytes::Bytes>, BoxError>>> {
        let this = &mut *self;
        this.handed.store(IDLE, Ordering::Relaxed);
        let polled = Pin::new(&mut this.inner).poll_frame(cx);
        let stamp = match &polled {
            Poll::Ready(Some(Ok(_))) => now_ms().max(1),
            Poll::Ready(_) => DONE,
            Poll::Pending => IDLE,
        };
        this.handed.store(stamp, Ordering::Relaxed);
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

/// Fires when the upstream has not taken the call's next frame for `write_timeout`.
pub struct WriteWatch {
    handed: Arc<AtomicU64>,
    timeout: Duration,
    /// Made at the first poll that finds the body not ended (a unary call's usually has).
    timer: Option<Pin<Box<Sleep>>>,
}

/// Wraps a call's request body, and gives the watch on its writes.
pub fn watch(body: ProxyBody, timeout: Duration) -> (ProxyBody, WriteWatch) {
    let handed = Arc::new(AtomicU64::new(IDLE));
    let watched = Watched {
        inner: body,
        handed: handed.clone(),
    };
    let watch = WriteWatch {
        handed,
        timeout,
        timer: None,
    };
    (watched.boxed(), watch)
}

impl WriteWatch {
    /// Ready when a frame handed over has waited `write_timeout`; never once the body has ended.
    pub fn poll_stalled(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        loop {
            let due = match self.handed.load(Ordering::Relaxed) {
                DONE => return Poll::Pending,
                IDLE => now_ms() + self.timeout.as_millis() as u64,
                at => at + self.timeout.as_millis() as u64,
            };
            if due <= now_ms() {
                return Poll::Ready(());
            }
            let at = instant_of(due);
            let timer = self
                .timer
                .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(at)));
            if timer.deadline() != at {
                timer.as_mut().reset(at);
            }
            if timer.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
        }
    }

    /// [`WriteWatch::poll_stalled`] as a future.
    pub async fn stalled(&mut self) {
        std::future::poll_fn(|cx| self.poll_stalled(cx)).await
    }
}
