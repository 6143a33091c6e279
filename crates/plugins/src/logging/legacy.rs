//! Kong's deprecated queue fields of the queued logging plugins (`queue_size`, `flush_timeout`,
//! `retry_count`), mapped onto the `queue` record as Kong's `Queue.get_plugin_params` does. Runs when a
//! plugin instance is built, never per request.

use super::queue::QueueConfig;

/// The deprecated fields as a plugin's config holds them (absent or null when not set).
#[derive(Debug, Default, Clone, Copy, serde::Deserialize)]
pub struct LegacyQueueFields {
    /// No effect in Kong 3.x (warned about when set and not 10).
    pub retry_count: Option<i64>,
    /// `queue.max_batch_size` when set and not 1.
    pub queue_size: Option<i64>,
    /// `queue.max_coalescing_delay` when set and not 2.
    pub flush_timeout: Option<f64>,
}

impl LegacyQueueFields {
    /// `queue` with the deprecated fields applied, warning (as Kong does) for each one in use.
    pub fn apply(&self, plugin: &str, queue: &QueueConfig) -> QueueConfig {
        let mut queue = queue.clone();
        if let Some(size) = self.queue_size.filter(|s| *s != 1) {
            tracing::warn!(
                "{plugin}: config.queue_size is deprecated, use config.queue.max_batch_size"
            );
            queue.max_batch_size = size.max(1) as usize;
        }
        if let Some(delay) = self.flush_timeout.filter(|d| *d != 2.0) {
            tracing::warn!(
                "{plugin}: config.flush_timeout is deprecated, use config.queue.max_coalescing_delay"
            );
            queue.max_coalescing_delay = delay.clamp(0.0, 3600.0);
        }
        if self.retry_count.is_some_and(|c| c != 10) {
            tracing::warn!(
                "{plugin}: config.retry_count has no effect, use config.queue.max_retry_time"
            );
        }
        queue
    }
}
