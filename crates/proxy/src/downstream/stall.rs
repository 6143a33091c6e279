//! nginx's client-side gap timeouts: `client_body_timeout` bounds the wait between two successive reads
//! of a request body, `send_timeout` the wait between two successive writes of a response. Each bounds
//! a gap, not the whole transfer: an upload or download that keeps moving is never cut, one that stops is.
//!
//! Only a wait on the client's socket counts, as in nginx (which arms its timer when a read or write would
//! block): while the upstream is slow the client is not to blame. The timer is made on the first wait, so a
//! request that never waits on its client (a GET whose response fits the socket buffer) has none.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::time::{Instant, Sleep};

/// A gap timer over one transfer (a request body, or a response).
pub struct Stall {
    /// In milliseconds (up to 49 days): small, as an h2 request body carries one.
    limit_ms: u32,
    /// Made at the first wait, then reset at the start of each one.
    timer: Option<Pin<Box<Sleep>>>,
    /// A wait has begun and no progress came since: the timer runs.
    waiting: bool,
}

impl Stall {
    pub fn new(limit: Duration) -> Stall {
        Stall {
            limit_ms: limit.as_millis().try_into().unwrap_or(u32::MAX),
            timer: None,
            waiting: false,
        }
    }

    /// The transfer moved (bytes were read or written): the next wait starts a new gap.
    #[inline]
    pub fn progressed(&mut self) {
        self.waiting = false;
    }

    /// The transfer waits on the client: Ready when this wait has lasted `limit`, else Pending with the
    /// timer's wake-up registered.
    pub fn poll_expired(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        if !self.waiting {
            self.waiting = true;
            let deadline = Instant::now() + Duration::from_millis(self.limit_ms.into());
            match self.timer.as_mut() {
                Some(timer) => timer.as_mut().reset(deadline),
                None => self.timer = Some(Box::pin(tokio::time::sleep_until(deadline))),
            }
        }
        match self.timer.as_mut() {
            Some(timer) => timer.as_mut().poll(cx),
            None => Poll::Pending,
        }
    }
}

#[cfg(test)]
mod tests;
