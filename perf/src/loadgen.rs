//! Load generation: `wrk` for maximum throughput (closed loop), `oha` for latency under a
//! constant offered rate (open loop, with latency correction against coordinated omission); the
//! protocol cases have their own: WebSocket tunnels driven by this crate ([`ws`]) and gRPC calls by
//! `h2load` ([`h2load`]).

pub mod h2load;
pub mod oha;
pub mod wrk;
pub mod ws;

use crate::cases::{Case, Protocol};
use crate::results::LoadResult;
use anyhow::{bail, Context, Result};
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

/// One load run.
#[derive(Clone, Debug)]
pub struct LoadSpec {
    /// Base URL of the proxy, e.g. `http://127.0.0.1:8000`.
    pub base_url: String,
    /// The case whose routes and credentials are addressed.
    pub case: Case,
    /// Concurrent connections.
    pub connections: u32,
    /// Load-generator threads.
    pub threads: u32,
    /// How long to load.
    pub duration: Duration,
    /// Constant offered rate (requests/s); `None` = as fast as possible with wrk.
    pub rate: Option<u32>,
    /// CPUs to pin the generator to (`taskset -c` list).
    pub cpus: Option<String>,
    /// Directory for the generated script.
    pub work_dir: PathBuf,
    /// Calls in flight per HTTP/2 connection (grpc-unary's h2load `-m`).
    pub streams: u32,
    /// The built-in upstream, `host:port`, filled in by the driver: grpc-unary reads its call count.
    pub upstream: Option<String>,
}

/// Runs the load described by `spec` and returns what the generator measured.
pub fn run(spec: &LoadSpec) -> Result<LoadResult> {
    match (spec.case.kind.protocol(), spec.rate) {
        (Protocol::WebSocket, None) => ws::run(spec),
        (Protocol::Grpc, None) => h2load::run(spec),
        (Protocol::Http, None) => wrk::run(spec),
        (Protocol::Http, Some(rate)) => oha::run(spec, rate),
        (_, Some(_)) => bail!(
            "case {}: --rate (constant offered load) is for HTTP cases only",
            spec.case
        ),
    }
}

/// Builds a command, pinned with `taskset -c` when `cpus` is given.
pub fn pinned(cpus: Option<&str>, program: impl AsRef<std::ffi::OsStr>) -> Command {
    match cpus {
        Some(c) => {
            let mut cmd = Command::new("taskset");
            cmd.arg("-c").arg(c).arg(program);
            cmd
        }
        None => Command::new(program),
    }
}

/// Runs a command to completion and returns its stdout, failing with its stderr. The process is stopped
/// if the run is interrupted.
pub fn output(mut cmd: Command, what: &str) -> Result<String> {
    let child = cmd
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot run {what} (is it installed?)"))?;
    let _held = crate::interrupt::hold_process(child.id());
    let out = child
        .wait_with_output()
        .with_context(|| format!("waiting for {what}"))?;
    if !out.status.success() {
        bail!(
            "{what} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Whole seconds for a duration, at least 1 (wrk and oha take `Ns`).
pub fn secs_arg(d: Duration) -> String {
    format!("{}s", d.as_secs_f64().ceil().max(1.0) as u64)
}
