//! Lock-free, allocation-free metric primitives for Sluice's metrics pipeline (issue 6).
//!
//! Recording on the request path touches only relaxed atomics in pre-allocated slots; aggregation and
//! Prometheus text rendering happen only when `/metrics` is scraped. This crate is the foundation only:
//! the prometheus/file-log/http-log plugins and the `/metrics` endpoints are not wired yet.

pub mod counter;
pub mod histogram;

pub use counter::Counter;
pub use histogram::{Histogram, KONG_LATENCY_BUCKETS, UPSTREAM_LATENCY_BUCKETS};
