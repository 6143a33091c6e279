//! When a data plane pings its control plane after a delta. Kong's DP pings every 30 s and right after it
//! applies a config, so that the CP shows the hash it runs. Right after every delta, a DP following a
//! stream of changes (one every 100 ms) would ping ten times a second: a frame each way per change, each
//! a wake-up on both nodes, for a status nobody reads that often. So after a delta the DP pings at once
//! when it has not pinged for [`AFTER_DELTA`] (a single change is reported as Kong's DP reports it), and
//! otherwise once, that long after its last ping, with the hash it runs by then.

use std::time::Duration;
use tokio::time::Instant;

/// The least time between two pings that report deltas.
pub const AFTER_DELTA: Duration = Duration::from_secs(1);

/// The pings of one link.
#[derive(Default)]
pub struct Pings {
    /// None: no ping yet on this link.
    last: Option<Instant>,
    soon: Option<Instant>,
}

impl Pings {
    /// A ping went out now (any ping: it reports the hash the DP runs).
    pub fn sent(&mut self) {
        self.last = Some(Instant::now());
        self.soon = None;
    }

    /// A delta went live: true when the DP pings now; otherwise a ping is due at [`Pings::due`].
    pub fn after_delta(&mut self) -> bool {
        let Some(next) = self.last.map(|last| last + AFTER_DELTA) else {
            return true;
        };
        if Instant::now() >= next {
            return true;
        }
        self.soon.get_or_insert(next);
        false
    }

    /// When the ping that reports the last deltas is due (None: none is waiting).
    pub fn due(&self) -> Option<Instant> {
        self.soon
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_single_delta_pings_at_once_and_a_stream_once_a_second() {
        let mut pings = Pings::default();
        assert!(pings.after_delta(), "the first delta pings at once");
        pings.sent();
        let first = Instant::now();
        for _ in 0..5 {
            tokio::time::advance(Duration::from_millis(100)).await;
            assert!(!pings.after_delta());
        }
        assert_eq!(pings.due(), Some(first + AFTER_DELTA));
        tokio::time::advance(Duration::from_millis(500)).await;
        pings.sent();
        assert_eq!(pings.due(), None);
        tokio::time::advance(AFTER_DELTA).await;
        assert!(
            pings.after_delta(),
            "a delta after a quiet second pings at once"
        );
    }
}
