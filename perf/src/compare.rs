//! `compare A B`: runs both targets interleaved on the same cases and applies Kong's release
//! gates to every (case, connections) both ran.

use crate::results::Combined;
use crate::stats::gates::{self, change, judge_row, RowVerdict, Side, Verdict};
use std::fmt::Write as _;

/// One judged row: A (baseline) against B (candidate).
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// Case label.
    pub case: String,
    /// Connections.
    pub connections: u32,
    /// Baseline medians.
    pub a: Side,
    /// Candidate medians.
    pub b: Side,
    /// The gates' verdicts.
    pub verdict: RowVerdict,
}

fn side(c: &Combined) -> Side {
    Side {
        rps: c.rps.median,
        rps_cv: c.rps.cv,
        p95: c.latency.p95,
        p99: c.latency.p99,
    }
}

/// Judges every (case, connections) that both `a` and `b` ran.
pub fn judge(combined: &[Combined], a: &str, b: &str) -> Vec<Row> {
    combined
        .iter()
        .filter(|x| x.target == a)
        .filter_map(|x| {
            let y = combined
                .iter()
                .find(|y| y.target == b && y.case == x.case && y.connections == x.connections)?;
            let (sa, sb) = (side(x), side(y));
            Some(Row {
                case: x.case.clone(),
                connections: x.connections,
                a: sa,
                b: sb,
                verdict: judge_row(&sa, &sb),
            })
        })
        .collect()
}

/// The overall verdict of judged rows.
pub fn overall(rows: &[Row]) -> Verdict {
    gates::overall(&rows.iter().map(|r| r.verdict).collect::<Vec<_>>())
}

/// The verdict table, in Markdown.
pub fn table(rows: &[Row], a: &str, b: &str) -> String {
    let mut out = format!("A = `{a}` (baseline), B = `{b}` (candidate)\n\n");
    out.push_str("| case | conns | RPS A | RPS B | Δ RPS | p95 Δ | p99 Δ | CV A / B | verdict |\n|---|---:|---:|---:|---:|---:|---:|---:|---|\n");
    for r in rows {
        let pct = |x: f64| format!("{:+.1}%", x * 100.0);
        let _ = writeln!(
            out,
            "| {} | {} | {:.0} | {:.0} | {} {} | {} {} | {} {} | {:.1}% / {:.1}% | **{}** |",
            r.case,
            r.connections,
            r.a.rps,
            r.b.rps,
            pct(change(r.a.rps, r.b.rps)),
            r.verdict.rps,
            pct(change(r.a.p95, r.b.p95)),
            r.verdict.p95,
            pct(change(r.a.p99, r.b.p99)),
            r.verdict.p99,
            r.a.rps_cv * 100.0,
            r.b.rps_cv * 100.0,
            r.verdict.overall
        );
    }
    let _ = writeln!(
        out,
        "\nOverall: **{}** (gates: RPS −5% warn / −10% fail; p95 +5% / +15%; p99 +5% / +20%; CV > 15% unstable)",
        overall(rows)
    );
    out
}
