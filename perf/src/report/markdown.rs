//! The Markdown report: settings, one table row per (case, target, connections) with ratios,
//! and the notes raised during the run.

use super::{nginx_baseline, plugin_baseline};
use crate::results::{Combined, Results};
use crate::stats::ratio;
use std::fmt::Write as _;

/// Renders the whole report.
pub fn markdown(results: &Results) -> String {
    let m = &results.meta;
    let mut out = String::from("# sluice-perf results\n\n");
    let _ = writeln!(out, "- command: `{}`", m.command);
    let _ = writeln!(
        out,
        "- mode: {}; driver: {}; started (unix): {}",
        m.mode, m.driver, m.started_unix
    );
    let reps = results.combined.iter().map(|c| c.rps.n).max().unwrap_or(0);
    let _ = writeln!(out, "- repetitions per row: {reps} (interleaved across targets); RPS shown as median (min–max)\n");
    out.push_str("| case | target | conns | RPS | CV | p50 ms | p95 ms | p99 ms | max ms | CPU µs/req | faults/req | peak RSS MiB | errors | non-2xx | × nginx | × no-plugins |\n");
    out.push_str(
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for row in &results.combined {
        out.push_str(&line(&results.combined, row));
    }
    out.push_str("\n× nginx: RPS over nginx's no-plugins RPS at the same connections (for ws-echo and grpc-unary: over nginx's RPS on the same case); × no-plugins: RPS over the same target's no-plugins case with the same routes. CV above 15% is marked ⚠ (unstable).\n");
    if results
        .combined
        .iter()
        .any(|c| c.case.starts_with("ws-echo"))
    {
        out.push_str("\nws-echo: RPS is echoed messages/s, conns the number of WebSocket tunnels (one message in flight each), CPU per message.\n");
    }
    if results
        .combined
        .iter()
        .any(|c| c.case.starts_with("grpc-unary"))
    {
        out.push_str("\ngrpc-unary: RPS is gRPC unary calls/s (h2load; conns = HTTP/2 connections, each with `--streams` calls in flight); non-2xx counts failed calls and 2xx answers the upstream never counted.\n");
    }
    if !m.notes.is_empty() {
        out.push_str("\n## Notes\n\n");
        for n in &m.notes {
            let _ = writeln!(out, "- {n}");
        }
    }
    out
}

fn line(all: &[Combined], x: &Combined) -> String {
    let fmt_ratio = |base: Option<&Combined>| {
        base.and_then(|b| ratio(x.rps.median, b.rps.median))
            .map_or("—".to_string(), |r| format!("{r:.2}"))
    };
    let unstable = if x.rps.unstable() { " ⚠" } else { "" };
    format!(
        "| {} | {} | {} | {:.0} ({:.0}–{:.0}) | {:.1}%{unstable} | {:.2} | {:.2} | {:.2} | {:.2} | {} | {} | {} | {} | {} | {} | {} |\n",
        x.case,
        x.target,
        x.connections,
        x.rps.median,
        x.rps.min,
        x.rps.max,
        x.rps.cv * 100.0,
        x.latency.p50,
        x.latency.p95,
        x.latency.p99,
        x.latency.max,
        x.cpu_us_per_req.map_or("—".into(), |c| format!("{c:.1}")),
        x.faults_per_req.map_or("—".into(), |f| format!("{f:.3}")),
        x.peak_rss_kib.map_or("—".into(), |k| format!("{:.1}", k as f64 / 1024.0)),
        x.errors,
        x.non_2xx,
        fmt_ratio(nginx_baseline(all, x)),
        fmt_ratio(plugin_baseline(all, x)),
    )
}
