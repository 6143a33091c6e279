//! The gap timer: a wait expires after its limit, and progress starts the gap again.

use super::*;
use std::future::poll_fn;

#[tokio::test(start_paused = true)]
async fn a_gap_expires_only_without_progress() {
    let mut stall = Stall::new(Duration::from_secs(10));
    let expired = |stall: &mut Stall| {
        let waker = futures_util::task::noop_waker();
        stall
            .poll_expired(&mut Context::from_waker(&waker))
            .is_ready()
    };
    assert!(!expired(&mut stall));
    tokio::time::advance(Duration::from_secs(6)).await;
    assert!(!expired(&mut stall));
    // Progress: the gap starts again, 6 s in does not count.
    stall.progressed();
    assert!(!expired(&mut stall));
    tokio::time::advance(Duration::from_secs(6)).await;
    assert!(!expired(&mut stall));
    tokio::time::advance(Duration::from_secs(5)).await;
    poll_fn(|cx| stall.poll_expired(cx)).await;
}
