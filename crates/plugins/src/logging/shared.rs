//! Logging queues shared across config snapshots: plugin instances with the same queue key (plugin name
//! and the config fields that shape delivery) get the same [`Queue`], so an unchanged reload keeps the
//! queue, its pending records and its connections. Only weak references are kept here: when no snapshot
//! uses a queue any more, it closes, drains and its task ends.

use super::queue::Queue;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

/// Live logging queues by key; owned by [`crate::state::PluginState`].
#[derive(Default)]
pub struct LogQueues {
    queues: Mutex<HashMap<String, Weak<Queue>>>,
}

impl LogQueues {
    /// The live queue under `key`, or a new one from `start` (called under the lock, so two plugin
    /// instances built at once still share one queue). Runs at config compile time, never per request.
    pub fn get_or_start(
        &self,
        key: String,
        start: impl FnOnce() -> Result<Queue, String>,
    ) -> Result<Arc<Queue>, String> {
        let mut queues = self.queues.lock().unwrap_or_else(|p| p.into_inner());
        queues.retain(|_, q| q.strong_count() > 0);
        if let Some(queue) = queues.get(&key).and_then(Weak::upgrade) {
            return Ok(queue);
        }
        let queue = Arc::new(start()?);
        queues.insert(key, Arc::downgrade(&queue));
        Ok(queue)
    }

    /// Waits up to `timeout` for every live queue to deliver what it holds (at shutdown, after the proxy
    /// drained); true when all are empty. Records still failing are not waited for beyond `timeout`.
    pub fn flush(&self, timeout: Duration) -> bool {
        let live: Vec<Arc<Queue>> = {
            let queues = self.queues.lock().unwrap_or_else(|p| p.into_inner());
            queues.values().filter_map(Weak::upgrade).collect()
        };
        let deadline = Instant::now() + timeout;
        loop {
            if live.iter().all(|q| q.stats().pending == 0) {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Number of live queues (for tests of reloads).
    pub fn len(&self) -> usize {
        let queues = self.queues.lock().unwrap_or_else(|p| p.into_inner());
        queues.values().filter(|q| q.strong_count() > 0).count()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
