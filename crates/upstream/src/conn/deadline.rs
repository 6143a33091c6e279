//! A connection's response deadline, armed lazily: one timer per upstream connection for all its
//! exchanges, instead of one timer registered and cancelled per request.
//!
//! A body-less request waits for its response head until `sent + read_timeout`. With a timer per
//! request, each exchange inserted an entry into tokio's timer wheel and removed it again: ~1k
//! instructions per request (callgrind, no-plugins: the entry's registration on first poll, the
//! timeout's own poll, the wheel's expiry scan). Here the connection keeps one [`Sleep`], and an
//! exchange only records its due instant. The timer is moved only when it would fire too late (a due
//! earlier than where it is armed) or when it fires before the current due (armed for an earlier
//! exchange): then it is re-armed once. Under steady traffic that is one wheel operation per
//! `read_timeout` per connection.
//!
//! The timer is made on first use, on the runtime that polls it: a pooled connection stays on its
//! worker, whose runtime outlives it.

use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::time::{Instant, Sleep};

/// The response did not come by its due instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Expired;

/// One connection's timer, reused by every exchange on it (see the module's opening).
#[derive(Default)]
pub struct Deadline {
    timer: Option<Pin<Box<Sleep>>>,
}

impl Deadline {
    /// Runs `exchange` until it finishes or `due` passes, whichever comes first.
    pub async fn bound<F: Future + Unpin>(
        &mut self,
        due: Instant,
        mut exchange: F,
    ) -> Result<F::Output, Expired> {
        poll_fn(|cx| {
            if let Poll::Ready(out) = Pin::new(&mut exchange).poll(cx) {
                return Poll::Ready(Ok(out));
            }
            self.poll_due(due, cx).map(|()| Err(Expired))
        })
        .await
    }

    /// Ready once `due` has passed; otherwise the task is woken by then (or earlier, when the timer was
    /// armed for an earlier exchange: it is then re-armed at `due`).
    fn poll_due(&mut self, due: Instant, cx: &mut Context<'_>) -> Poll<()> {
        let timer = self
            .timer
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(due)));
        loop {
            if timer.deadline() > due {
                timer.as_mut().reset(due);
            }
            match timer.as_mut().poll(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(()) if timer.deadline() >= due => return Poll::Ready(()),
                // It fired at an earlier exchange's due: this one's is still ahead.
                Poll::Ready(()) => timer.as_mut().reset(due),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// An exchange that never finishes.
    fn forever() -> std::future::Pending<()> {
        std::future::pending()
    }

    #[tokio::test(start_paused = true)]
    async fn an_exchange_past_its_due_expires_at_that_due() {
        let mut deadline = Deadline::default();
        let start = Instant::now();
        let due = start + Duration::from_secs(5);
        assert_eq!(deadline.bound(due, forever()).await, Err(Expired));
        assert_eq!(Instant::now(), due);
    }

    /// A first exchange due `armed` s after the start arms the timer and is answered at +1 s; `later` s
    /// after that, a second one that never finishes is sent with `secs` s to go. It must expire exactly
    /// at its own due, wherever the first left the timer.
    async fn second_exchange_expires_at_its_own_due(armed: u64, later: u64, secs: u64) {
        let mut deadline = Deadline::default();
        let start = Instant::now();
        let answered = Box::pin(tokio::time::sleep(Duration::from_secs(1)));
        let first = deadline.bound(start + Duration::from_secs(armed), answered);
        assert_eq!(first.await, Ok(()));
        tokio::time::sleep(Duration::from_secs(later)).await;
        let due = Instant::now() + Duration::from_secs(secs);
        assert_eq!(deadline.bound(due, forever()).await, Err(Expired));
        assert_eq!(Instant::now(), due);
    }

    /// Armed at +5 s, the second is due at +8 s: the timer fires at +5 s and must be re-armed rather
    /// than expire the exchange.
    #[tokio::test(start_paused = true)]
    async fn a_timer_armed_for_an_earlier_due_does_not_expire_a_later_one() {
        second_exchange_expires_at_its_own_due(5, 2, 5).await;
    }

    /// Armed at +60 s, the second is due at +3 s: the timer must move back.
    #[tokio::test(start_paused = true)]
    async fn an_earlier_due_moves_the_timer_back() {
        second_exchange_expires_at_its_own_due(60, 0, 2).await;
    }

    #[tokio::test(start_paused = true)]
    async fn an_exchange_that_finishes_in_time_is_answered() {
        let mut deadline = Deadline::default();
        let start = Instant::now();
        let slow = Box::pin(async {
            tokio::time::sleep(Duration::from_secs(2)).await;
            7
        });
        assert_eq!(
            deadline.bound(start + Duration::from_secs(5), slow).await,
            Ok(7)
        );
    }
}
