//! What the logging plugins (`http-log`, `file-log`, `tcp-log`, `udp-log`, `syslog`, `loggly`) share: the log
//! record serializers (a request's, [`serialize`]; a stream session's, [`session`]), the bounded batching queue that carries records off the proxy workers, and the
//! background thread that drains every queue ([`sockets`], [`address`] and [`severity`] serve the socket
//! plugins).
//!
//! The hot path is [`queue::Queue::push`]: the record is serialized on the worker (it borrows the request
//! context), then handed to the queue without a lock and without waiting. Everything that can block or wait
//! (HTTP requests, file writes, socket sends, retries) runs on the `sluice-log` thread (see [`runtime`]).
//!
//! Queues outlive a config reload when the plugin's config is unchanged: [`shared::LogQueues`] (held by
//! [`crate::state::PluginState`]) hands the same queue to the new snapshot. A queue whose plugin is gone
//! finishes delivering what it holds and its task ends, so reloads never accumulate threads or tasks.

pub mod address;
pub mod entities;
pub mod http_client;
pub(crate) mod json;
pub mod legacy;
pub mod logger;
pub mod queue;
pub mod rendered;
pub mod response_headers;
pub mod runtime;
pub mod sendmmsg;
pub mod serialize;
pub mod session;
pub mod severity;
pub mod shared;
pub mod sockets;
mod stats;

pub use stats::{dropped_records, failed_records, reopen_files_generation, reopen_log_files};
