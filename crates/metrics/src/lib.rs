//! Lock-free, allocation-free metric primitives and Kong's metric families for Sluice.
//!
//! Recording on the request path touches only relaxed atomics in pre-allocated, per-worker slots;
//! aggregation and Prometheus text rendering happen only when `/metrics` is scraped.

pub mod counter;
pub mod histogram;
pub mod kong;

pub use counter::Counter;
pub use histogram::{Histogram, Totals, KONG_LATENCY_BUCKETS, UPSTREAM_LATENCY_BUCKETS};
pub use kong::{
    Flags, Observation, Registry, RouteSeries, SessionObservation, Source, StreamSeries,
};
