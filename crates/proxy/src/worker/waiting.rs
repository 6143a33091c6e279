//! The waiting room of a plain listener: connections accepted whose client has sent nothing yet.
//!
//! nginx keeps such a connection as a socket and a timer. A task per connection costs a task cell (with
//! its timer, its readiness wait and the worker's stop watch, ~1 KB), so the room keeps them instead as
//! small futures in one set, polled by the listener's accept loop: a waiting connection is its socket, its
//! peer, its share of the worker's connection count, and when it was accepted.
//!
//! - A connection leaves the room when its client sends a byte or closes (`peek`: readiness may be
//!   reported spuriously, and a byte is waited for without being taken). The accept loop then serves it
//!   in a task of its own.
//! - `client_header_timeout` counts from the accept. The room sweeps for connections past it every
//!   eighth of the timeout (at most every second, at least every 10 ms) and closes them, as nginx closes
//!   a silent connection (no response).
//! - When the worker stops, its accept loops end and the room with them: waiting connections close.

use crate::watchdog::now_ms;
use futures_util::stream::{FuturesUnordered, StreamExt};
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;
use tokio::io::ReadBuf;
use tokio::net::TcpStream;
use tokio::time::Sleep;

/// An accepted connection whose client has not spoken yet.
pub(super) struct Silent<G> {
    pub stream: TcpStream,
    pub peer: SocketAddr,
    /// The connection's share of the worker's counts, released when it closes.
    pub guard: G,
    /// When it was accepted, on the watchdog's millisecond clock.
    pub accepted_ms: u64,
}

/// The silent connections of one listener.
pub(super) struct Room<G> {
    waiting: FuturesUnordered<Waiting<G>>,
    timeout_ms: u64,
    sweep_every: Duration,
    /// Armed while the room has connections.
    sweep: Option<Pin<Box<Sleep>>>,
}

impl<G: Unpin> Room<G> {
    pub(super) fn new(header_timeout: Duration) -> Room<G> {
        Room {
            waiting: FuturesUnordered::new(),
            timeout_ms: header_timeout.as_millis() as u64,
            sweep_every: (header_timeout / 8)
                .clamp(Duration::from_millis(10), Duration::from_secs(1)),
            sweep: None,
        }
    }

    /// A connection to wait on.
    pub(super) fn enter(&mut self, silent: Silent<G>) {
        if self.sweep.is_none() {
            self.sweep = Some(Box::pin(tokio::time::sleep(self.sweep_every)));
        }
        self.waiting.push(Waiting {
            deadline_ms: silent.accepted_ms + self.timeout_ms,
            silent: Some(silent),
            waker: None,
        });
    }

    /// The next connection whose client spoke (or closed). Pending while there is none; connections
    /// past the header timeout are closed meanwhile.
    pub(super) fn poll_spoke(&mut self, cx: &mut Context<'_>) -> Poll<Silent<G>> {
        loop {
            // Until the sweep is pending (its waker registered) or disarmed.
            while let Some(sweep) = &mut self.sweep {
                if sweep.as_mut().poll(cx).is_pending() {
                    break;
                }
                self.close_expired();
            }
            match self.waiting.poll_next_unpin(cx) {
                Poll::Ready(Some(Some(silent))) => return Poll::Ready(silent),
                // Closed by the sweep, or its socket failed.
                Poll::Ready(Some(None)) => continue,
                Poll::Ready(None) | Poll::Pending => return Poll::Pending,
            }
        }
    }

    /// Closes the connections past the header timeout, and re-arms the sweep while any is left.
    fn close_expired(&mut self) {
        let now = now_ms();
        for waiting in self.waiting.iter_mut() {
            if waiting.deadline_ms <= now {
                // Dropping the socket closes it; the waker lets the set drop the emptied future.
                waiting.silent = None;
                if let Some(waker) = waiting.waker.take() {
                    waker.wake();
                }
            }
        }
        self.sweep = None;
        if !self.waiting.is_empty() {
            self.sweep = Some(Box::pin(tokio::time::sleep(self.sweep_every)));
        }
    }

    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.waiting.len()
    }
}

/// One connection in the room: ready with it when its client spoke, with None once it was closed.
struct Waiting<G> {
    silent: Option<Silent<G>>,
    deadline_ms: u64,
    /// The set's waker for this future, for the sweep to close it.
    waker: Option<Waker>,
}

impl<G: Unpin> Future for Waiting<G> {
    type Output = Option<Silent<G>>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        let Some(silent) = &this.silent else {
            return Poll::Ready(None);
        };
        let mut byte = [0u8; 1];
        match silent.stream.poll_peek(cx, &mut ReadBuf::new(&mut byte)) {
            Poll::Ready(Ok(_)) => Poll::Ready(this.silent.take()),
            Poll::Ready(Err(_)) => Poll::Ready(None),
            Poll::Pending => {
                if !this.waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                    this.waker = Some(cx.waker().clone());
                }
                Poll::Pending
            }
        }
    }
}

#[cfg(test)]
mod tests;
