//! Sluice's data plane: the compiled config [`Snapshot`] and the HTTP proxy that serves it.
//!
//! Thread-per-core: [`ProxyServer::start`] spawns `workers` threads, each running a `current_thread` tokio
//! runtime with its own `SO_REUSEPORT` listener per address and its own upstream connection pool, so the
//! request path shares no lock between workers. Each request loads the live snapshot once from the
//! [`SharedSnapshot`] and finishes on it, whatever reloads happen meanwhile.
//!
//! Module map, in request order:
//! 1. [`worker`] accepts (a plain connection waits in its listener's room until its client speaks) and
//!    hands each request to [`handler`], the request driver, which loads the snapshot and takes the request
//!    through every step below, in Kong's order;
//! 2. [`strict`] checks the head, [`exchange`] routes ([`path`], [`realip`]; Kong's https-only check);
//! 3. [`phases`] runs `rewrite`/`access` of the route's plugins (routes with plugins only);
//! 4. [`exchange`] balances and sends: the upstream request written once, [`upstream`] picks a target and
//!    sends over a pooled connection, retrying;
//! 5. [`respond`] adds Kong's response headers, then [`phases`] runs `header_filter`;
//! 6. [`metrics`] observes the request (recorded once, by the driver);
//! 7. [`phases`] runs `body_filter` per chunk and `log` after the last byte.
//!
//! A WebSocket upgrade leaves the driver after routing for [`upgrade`], which takes it through the same
//! steps in a task of its own and then copies the upgraded connection both ways. A gRPC call (a route or
//! service with a grpc protocol) leaves it the same way for [`grpc`], which sends it over HTTP/2.
//!
//! L4 streams (`stream_listen`: tcp, tls, tls_passthrough and udp routes) are [`stream`], on the same
//! workers.
//!
//! Whatever step fails, [`error`] makes the response (negotiated by [`mime`]). What every request reads is
//! [`shared`]. Active health probes run on one `sluice-health` thread beside the workers ([`checker`]).
//!
//! The upstream side itself (forwarding headers, the HTTP/1.1 client and its pool, balancers, DNS, target
//! health, upstream TLS) is the `sluice-upstream` crate, which knows nothing of routes, plugins or snapshots.

mod checker;
mod downstream;
mod error;
mod exchange;
mod grpc;
mod handler;
mod in_place;
mod listen;
pub mod metrics;
mod mime;
mod names;
mod path;
mod phases;
mod realip;
mod respond;
mod rewind;
mod server;
mod settings;
mod shared;
mod snapshot;
mod stats;
mod stream;
mod strict;
mod tls;
mod upgrade;
mod upstream;
mod watchdog;
mod worker;

pub use error::ProxyError;
pub use listen::{parse_listen, ListenAddr};
pub use server::ProxyServer;
pub use settings::{HeaderSettings, ProxySettings};
pub use sluice_upstream::dns::{DnsSettings, Kind as DnsKind};
pub use sluice_upstream::pool::Keepalive;
pub use sluice_upstream::readahead::ResponseBuffering;
pub use sluice_upstream::spool::BodyBuffering;
pub use snapshot::{CompileError, Health, RouteIds, SharedSnapshot, Snapshot};
pub use stats::{ConnectionStates, ProxyStats};
pub use stream::{parse_stream_listen, StreamListen};

/// `sluice/<version>`: Sluice's word in `Via` and `Server`, where Kong says `kong/<version>`.
pub const PRODUCT: &str = concat!("sluice/", env!("CARGO_PKG_VERSION"));
