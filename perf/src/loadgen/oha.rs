//! `oha` driving for latency under a constant offered rate (`-q`), with `--latency-correction`
//! so a stalled response does not hide the requests that should have been sent meanwhile
//! (coordinated omission). oha is installed with `cargo install oha` on first use.
//!
//! oha cannot draw from a normal distribution: routes are spread uniformly with
//! `--rand-regex-url`, and every request carries the credential of the middle consumer.

use super::{output, pinned, secs_arg, LoadSpec};
use crate::cases::config::{credential_header, fixed_headers};
use crate::results::{Latency, LoadResult};
use anyhow::{bail, Context, Result};
use serde_json::Value;
use std::process::{Command, Stdio};

/// Makes sure `oha` is on the PATH, installing it with cargo when it is not.
pub fn ensure_installed() -> Result<()> {
    if Command::new("oha")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_ok()
    {
        return Ok(());
    }
    crate::progress(
        "oha not found: running `cargo install oha --locked` (constant-rate mode needs it)",
    );
    let status = Command::new("cargo")
        .args(["install", "oha", "--locked"])
        .status()?;
    if !status.success() {
        bail!("cargo install oha failed; install oha or run without --rate");
    }
    Ok(())
}

/// Runs oha at `rate` requests/s for `spec`.
pub fn run(spec: &LoadSpec, rate: u32) -> Result<LoadResult> {
    ensure_installed()?;
    let mut help_cmd = Command::new("oha");
    help_cmd.arg("--help");
    let help = output(help_cmd, "oha --help")?;
    let alternation: Vec<String> = (0..spec.case.routes).map(|i| i.to_string()).collect();
    let url = format!("{}/r({})", spec.base_url, alternation.join("|"));
    let mut cmd = pinned(spec.cpus.as_deref(), "oha");
    cmd.arg("-z")
        .arg(secs_arg(spec.duration))
        .arg("-c")
        .arg(spec.connections.to_string())
        .arg("-q")
        .arg(rate.to_string())
        .arg("--latency-correction")
        .arg("--no-tui")
        .arg("--rand-regex-url");
    if help.contains("--output-format") {
        cmd.args(["--output-format", "json"]);
    } else {
        cmd.arg("--json");
    }
    if let Some(auth) = spec.case.kind.auth() {
        let (name, value) = credential_header(auth, spec.case.consumers / 2);
        cmd.arg("-H").arg(format!("{name}: {value}"));
        for (name, value) in fixed_headers(auth) {
            cmd.arg("-H").arg(format!("{name}: {value}"));
        }
    }
    cmd.arg(url);
    parse(&output(cmd, "oha")?)
}

/// Parses oha's JSON report (times in seconds).
pub fn parse(stdout: &str) -> Result<LoadResult> {
    let v: Value = serde_json::from_str(stdout.trim()).context("oha did not print JSON")?;
    let f = |p: &str| v.pointer(p).and_then(Value::as_f64).unwrap_or(0.0);
    let ms = |p: &str| f(p) * 1000.0;
    let (mut ok, mut non_2xx) = (0u64, 0u64);
    if let Some(codes) = v.get("statusCodeDistribution").and_then(Value::as_object) {
        for (code, n) in codes {
            let n = n.as_u64().unwrap_or(0);
            if code.starts_with('2') || code.starts_with('3') {
                ok += n;
            } else {
                non_2xx += n;
            }
        }
    }
    let errors = v
        .get("errorDistribution")
        .and_then(Value::as_object)
        .map_or(0, |m| m.values().filter_map(Value::as_u64).sum());
    Ok(LoadResult {
        requests: ok + non_2xx,
        duration_s: f("/summary/total"),
        rps: f("/summary/requestsPerSec"),
        latency: Latency {
            p50: ms("/latencyPercentiles/p50"),
            p95: ms("/latencyPercentiles/p95"),
            p99: ms("/latencyPercentiles/p99"),
            max: ms("/summary/slowest"),
        },
        errors,
        non_2xx,
    })
}
