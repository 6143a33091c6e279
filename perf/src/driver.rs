//! Drivers: where and how the upstream, the targets and the load generator run.
//!
//! [`local::Local`] runs everything as processes on this machine, pinned with `taskset -c`
//! (gateway on `--gateway-cpus`, upstream and load generator on `--load-cpus`) and checks that
//! the pinning was granted. With [`local::Local::use_namespaces`] (the `netns` driver, `--driver
//! netns`) the gateway and the upstream run in network namespaces of their own joined by veth pairs
//! ([`netns::Namespaces`]), as separate hosts, still pinned the same way.

pub mod local;
pub mod netns;

use crate::cases::Case;
use crate::loadgen::LoadSpec;
use crate::results::LoadResult;
use crate::target::process::Running;
use crate::target::Resolved;
use anyhow::Result;
use std::path::Path;

/// CPU time and memory of a target at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Usage {
    /// User + system CPU seconds over the target's process tree.
    pub cpu_s: Option<f64>,
    /// Minor page faults over the target's process tree.
    pub minor_faults: Option<u64>,
    /// Peak RSS (VmHWM) summed over the process tree, KiB.
    pub peak_rss_kib: Option<u64>,
}

/// Runs the pieces of a benchmark. The runner calls `start_upstream` once, `start_target` for
/// every (case, target), then `usage` / `run_load` / `usage` around every measured run.
pub trait Driver {
    /// A short name for reports.
    fn name(&self) -> &'static str;

    /// Starts the built-in upstream; returns its `host:port`.
    fn start_upstream(&mut self, body_size: usize) -> Result<String>;

    /// Starts `target` serving `case` (whose declarative config is at `config`), with its files
    /// and log under `dir`. Peers ignore the config.
    fn start_target(
        &mut self,
        target: &Resolved,
        case: &Case,
        config: &Path,
        dir: &Path,
    ) -> Result<Running>;

    /// Runs one load against a started target. `spec.base_url` and `spec.cpus` are filled in by
    /// the driver.
    fn run_load(&mut self, running: &Running, spec: &LoadSpec) -> Result<LoadResult>;

    /// Reads the target's CPU time and peak memory.
    fn usage(&self, running: &Running) -> Usage;

    /// Warnings raised so far (pinning not granted, ...), for the report.
    fn notes(&self) -> Vec<String>;
}
