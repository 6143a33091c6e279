//! `h2load` driving for the grpc-unary case: `-c` connections with `-m` calls in flight each (`--streams`),
//! for the measured duration (`-D`), every call a POST of one gRPC-framed message
//! ([`crate::upstream::grpc::REQUEST`]) with `content-type: application/grpc` and `te: trailers`, spread
//! over the case's routes (`-i`, one URI per route, taken in turn). Over `http://` h2load speaks h2c with
//! prior knowledge, over `https://` h2 by ALPN. Latency percentiles come from its `--log-file` (one line per
//! call); the built-in upstream's call count, read before and after, shows 2xx answers that never reached it.

#[cfg(test)]
mod tests;

use super::{output, pinned, LoadSpec};
use crate::cases::config::grpc_path;
use crate::results::{Latency, LoadResult};
use crate::upstream::grpc;
use anyhow::{Context, Result};
use std::path::Path;

/// The calls' request headers.
pub const HEADERS: [&str; 2] = ["content-type: application/grpc", "te: trailers"];

/// The URIs h2load calls: the unary method of every route of the case, one a line.
pub fn uris(spec: &LoadSpec) -> String {
    (0..spec.case.routes)
        .map(|i| format!("{}{}\n", spec.base_url, grpc_path(i)))
        .collect()
}

/// h2load's arguments for `spec`, with the request body, URI list and log files.
pub fn args(spec: &LoadSpec, body: &Path, uris: &Path, log: &Path) -> Vec<String> {
    let threads = spec.threads.max(1);
    let mut a = vec![
        "-t".to_string(),
        threads.to_string(),
        "-c".into(),
        spec.connections.max(threads).to_string(),
        "-m".into(),
        spec.streams.max(1).to_string(),
        "-D".into(),
        format!("{}", spec.duration.as_secs_f64().ceil().max(1.0) as u64),
        "-d".into(),
        body.display().to_string(),
    ];
    for h in HEADERS {
        a.extend(["-H".into(), h.into()]);
    }
    a.extend([
        format!("--log-file={}", log.display()),
        "-i".into(),
        uris.display().to_string(),
    ]);
    a
}

/// What h2load printed at the end of a run.
#[derive(Debug, Default, PartialEq)]
pub struct Summary {
    /// The measured time, seconds.
    pub seconds: f64,
    /// Calls completed.
    pub done: u64,
    /// Calls that failed (stream or connection errors, timeouts).
    pub failed: u64,
    /// Answers with a 2xx status.
    pub ok: u64,
    /// Answers with another status.
    pub not_ok: u64,
}

/// Parses h2load's `finished in`, `requests:` and `status codes:` lines.
pub fn parse(stdout: &str) -> Result<Summary> {
    let mut s = Summary::default();
    // The numbers before each of `words` on a line like `requests: 10 total, 9 done, 1 failed`.
    let count = |line: &str, word: &str| -> u64 {
        line.split(',')
            .filter_map(|part| {
                let mut it = part.split_whitespace().rev();
                let (name, n) = (it.next()?, it.next()?);
                (name == word).then(|| n.parse::<u64>().ok())?
            })
            .sum()
    };
    let mut seen = false;
    for line in stdout.lines().map(str::trim) {
        if let Some(rest) = line.strip_prefix("finished in ") {
            let secs = rest.split(',').next().unwrap_or("");
            s.seconds = parse_seconds(secs).with_context(|| format!("bad h2load line: {line}"))?;
            seen = true;
        } else if let Some(rest) = line.strip_prefix("requests: ") {
            s.done = count(rest, "done");
            s.failed = count(rest, "failed");
        } else if let Some(rest) = line.strip_prefix("status codes: ") {
            s.ok = count(rest, "2xx");
            s.not_ok = count(rest, "3xx") + count(rest, "4xx") + count(rest, "5xx");
        }
    }
    anyhow::ensure!(seen, "h2load printed no summary; output was:\n{stdout}");
    Ok(s)
}

/// `10.00s`, `500.12ms` or `3.2us` in seconds.
fn parse_seconds(s: &str) -> Option<f64> {
    let s = s.trim();
    let (num, scale) = if let Some(n) = s.strip_suffix("ms") {
        (n, 1e-3)
    } else if let Some(n) = s.strip_suffix("us") {
        (n, 1e-6)
    } else {
        (s.strip_suffix('s')?, 1.0)
    };
    num.parse::<f64>().ok().map(|v| v * scale)
}

/// Latency percentiles (ms) of the calls in an h2load log (`start µs, status, duration µs` per line;
/// failed calls, status -1, are left out).
pub fn latency(log: &str) -> Latency {
    let mut us: Vec<f64> = log
        .lines()
        .filter_map(|l| {
            let mut cols = l.split('\t');
            let (_, status, d) = (cols.next()?, cols.next()?, cols.next()?);
            (status.trim() != "-1").then(|| d.trim().parse::<f64>().ok())?
        })
        .collect();
    crate::stats::percentiles_ms(&mut us)
}

/// Runs h2load for `spec`.
pub fn run(spec: &LoadSpec) -> Result<LoadResult> {
    let stem = spec.case.file_stem();
    let path = |ext: &str| spec.work_dir.join(format!("h2load-{stem}.{ext}"));
    let (body, list, log) = (path("body"), path("uris"), path("log"));
    std::fs::write(&body, grpc::frame(grpc::REQUEST))?;
    std::fs::write(&list, uris(spec))?;
    let calls = || spec.upstream.as_deref().and_then(upstream_calls);
    let before = calls();
    let mut cmd = pinned(spec.cpus.as_deref(), "h2load");
    cmd.args(args(spec, &body, &list, &log));
    let summary = parse(&output(cmd, "h2load (apt-get install nghttp2-client)")?)?;
    let counted = before.zip(calls()).map(|(b, a)| a.saturating_sub(b));
    let log_text = std::fs::read_to_string(&log).unwrap_or_default();
    let _ = std::fs::remove_file(&log);
    Ok(result(&summary, latency(&log_text), counted))
}

/// The run's figures: 2xx answers the upstream did not count (`counted`, when it was read) are failures.
pub fn result(s: &Summary, latency: Latency, counted: Option<u64>) -> LoadResult {
    let uncounted = counted.map_or(0, |c| s.ok.saturating_sub(c));
    LoadResult {
        requests: s.done,
        duration_s: s.seconds,
        rps: if s.seconds > 0.0 {
            s.ok as f64 / s.seconds
        } else {
            0.0
        },
        latency,
        errors: s.failed,
        non_2xx: s.not_ok + uncounted,
    }
}

/// The built-in upstream's gRPC call count (`GET /__grpc_calls`), if it answers.
fn upstream_calls(upstream: &str) -> Option<u64> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(upstream).ok()?;
    s.set_read_timeout(Some(std::time::Duration::from_secs(2)))
        .ok()?;
    write!(
        s,
        "GET {} HTTP/1.1\r\nHost: perf\r\nConnection: close\r\n\r\n",
        grpc::CALLS_PATH
    )
    .ok()?;
    let mut text = String::new();
    s.read_to_string(&mut text).ok()?;
    text.split("\r\n\r\n").nth(1)?.trim().parse().ok()
}
