//! Sluice's data plane: the compiled config [`Snapshot`] and the HTTP proxy that serves it.
//!
//! Thread-per-core: [`ProxyServer::start`] spawns `workers` threads, each running a `current_thread` tokio
//! runtime with its own `SO_REUSEPORT` listener per address and its own upstream connection pool, so the
//! request path shares no lock between workers. Each request loads the live snapshot once from the
//! [`SharedSnapshot`] and finishes on it, whatever reloads happen meanwhile.

mod balancer;
mod error;
mod forward;
mod handler;
mod listen;
mod path;
mod pool;
mod request_id;
mod server;
mod settings;
mod snapshot;

pub use error::ProxyError;
pub use listen::{parse_listen, ListenAddr};
pub use server::{ProxyServer, ProxyStats};
pub use settings::{HeaderSettings, ProxySettings};
pub use snapshot::{CompileError, SharedSnapshot, Snapshot};

/// `sluice/<version>`, used in `Via` and `Server`.
pub const PRODUCT: &str = concat!("sluice/", env!("CARGO_PKG_VERSION"));
