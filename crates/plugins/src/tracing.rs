//! Distributed tracing shared by the `opentelemetry` and `zipkin` plugins: trace and span ids, Kong's
//! `propagation` record (which tracing headers are read from the client's request, removed, and written to
//! the upstream request), the header formats themselves, and the HTTP exporter that delivers finished spans
//! from the `sluice-log` thread.
//!
//! Propagation runs in the `access` phase of either plugin: [`propagation::Propagation::extract`] reads the
//! first configured format found in the request, the plugin decides the outgoing context (its own trace and
//! span ids, sampled or not), then [`propagation::Propagation::finish`] clears and injects headers.

pub mod context;
pub(crate) mod export;
pub mod formats;
pub(crate) mod hex;
pub mod propagation;
pub(crate) mod request;
pub mod trace_header;

#[cfg(test)]
mod tests;
