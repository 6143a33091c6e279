//! `sluice-perf`: the performance-testing framework of Sluice.
//!
//! It generates Kong declarative configs for the benchmark cases Kong publishes numbers for
//! ([`cases`]), runs a fast built-in upstream ([`upstream`]), starts the targets under test
//! ([`target`]: sluice binaries, git refs built on demand, nginx peers) through a [`driver`] that
//! pins them to CPUs, loads them with `wrk` or `oha` ([`loadgen`]; the WebSocket and gRPC cases with
//! their own tunnel driver and `h2load`), repeats runs interleaved
//! ([`runner`]), applies Kong's release gates ([`stats::gates`], [`compare`]) and renders
//! Markdown/SVG reports ([`report`]). [`reload`] and [`db`] measure the config store and DB mode
//! against their goals; [`conns`] measures the memory an idle connection costs; [`cluster`] measures hybrid mode's deltas. `docs/perf.md` explains the method.

pub mod cases;
pub mod cluster;
pub mod compare;
pub mod conns;
pub mod db;
pub mod driver;
pub mod flamegraph;
pub mod interrupt;
pub mod loadgen;
pub mod pin;
pub mod procfs;
pub mod reload;
pub mod report;
pub mod results;
pub mod runner;
pub mod soak;
pub mod stats;
pub mod target;
pub mod upstream;

/// Prints a progress line on stderr; every long step of the tool announces itself through this.
pub fn progress(msg: impl std::fmt::Display) {
    eprintln!("[sluice-perf] {msg}");
}
