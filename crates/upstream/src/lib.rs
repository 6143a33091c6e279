//! The upstream side of Sluice's data plane: everything between "this request goes to that service" and the
//! upstream's response head, and the body read after it. No router, no plugins, no snapshot: the proxy
//! (`sluice-proxy`) compiles services into the types here and drives them per request.
//!
//! Module map, bottom up (a module imports only modules listed before it):
//! - pure helpers: [`error`], [`names`], [`lines`] (header lines as bytes), [`schedule`] (the smooth
//!   weighted round-robin order), [`body`] (the boxed body type), [`request_id`];
//! - per-process and per-worker state: [`metrics`] (pool counters, worker index), [`tls`] (upstream client
//!   configs), [`health`] (target state, passive and compiled active checks);
//! - the wire: [`forward`] (hop-by-hop and `X-Forwarded-*` rules), [`wire`] (the request as HTTP/1.1 bytes),
//!   [`conn`] (one connection: write the request, read the head), [`pool`] (per-worker idle connections),
//!   [`pooled`] (the response body, which returns its connection to the pool), [`spool`] (request
//!   buffering: a client's body read whole, in memory or an unnamed temporary file, before the upstream
//!   is chosen), [`readahead`] (response buffering: the pooled body read ahead of the client, with the
//!   spool's temporary files), [`tunnel`] (an upgraded connection's bytes copied both ways);
//! - choosing the address: [`dns`] (per-worker cached resolution), [`balancer`] (Kong's algorithms over
//!   targets, skipping those [`health`] marks down);
//! - [`h2`]: HTTP/2 connections to targets (gRPC services, and the gRPC health probe's);
//! - [`probe`]: one active health probe of one target, TCP, HTTP(S) or gRPC (the proxy schedules them).
//!
//! I/O (sockets, timers, DNS, temporary files) lives in [`conn`], [`pool`], [`pooled`], [`tunnel`], [`dns`],
//! [`h2`], [`probe`], [`readahead`] and [`spool`]; the rest does none.

pub mod balancer;
pub mod body;
pub mod conn;
pub mod dns;
pub mod error;
pub mod forward;
pub mod h2;
pub mod health;
pub mod lines;
pub mod metrics;
pub mod names;
pub mod pool;
pub mod pooled;
pub mod probe;
pub mod readahead;
pub mod request_id;
pub mod schedule;
pub mod spool;
pub mod tls;
pub mod tunnel;
pub mod wire;

pub use error::UpstreamError;
