//! Kong's release gates: how much a candidate may lose against a baseline.
//!
//! Throughput: −5% warns, −10% fails. P95 latency: +5% warns, +15% fails. P99 latency: +5%
//! warns, +20% fails. A run set whose throughput CV exceeds 15% is unstable and not judged.

use serde::{Deserialize, Serialize};
use std::fmt;

/// The outcome of one gate, ordered from best to worst.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Verdict {
    /// Within bounds.
    Pass,
    /// Past the warning bound: passes, but worth a look.
    Warn,
    /// Too noisy to judge (CV above 15% on either side).
    Unstable,
    /// Past the failure bound.
    Fail,
}

impl Verdict {
    /// The process exit code for an overall verdict: 0 pass/warn, 1 fail, 2 unstable.
    pub fn exit_code(self) -> u8 {
        match self {
            Verdict::Pass | Verdict::Warn => 0,
            Verdict::Fail => 1,
            Verdict::Unstable => 2,
        }
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Verdict::Pass => "pass",
            Verdict::Warn => "WARN",
            Verdict::Unstable => "UNSTABLE",
            Verdict::Fail => "FAIL",
        })
    }
}

/// Which way a metric is allowed to move.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// Larger is better (throughput): a drop is a regression.
    HigherIsBetter,
    /// Smaller is better (latency): a rise is a regression.
    LowerIsBetter,
}

/// One gate: relative warning and failure bounds on a metric's regression.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Gate {
    /// Metric name for tables.
    pub metric: &'static str,
    /// Which direction is a regression.
    pub direction: Direction,
    /// Regression (a fraction, e.g. 0.05) from which the gate warns.
    pub warn: f64,
    /// Regression from which the gate fails.
    pub fail: f64,
}

/// Throughput gate: −5% warn, −10% fail.
pub const THROUGHPUT: Gate = Gate {
    metric: "rps",
    direction: Direction::HigherIsBetter,
    warn: 0.05,
    fail: 0.10,
};
/// P95 latency gate: +5% warn, +15% fail.
pub const P95: Gate = Gate {
    metric: "p95",
    direction: Direction::LowerIsBetter,
    warn: 0.05,
    fail: 0.15,
};
/// P99 latency gate: +5% warn, +20% fail.
pub const P99: Gate = Gate {
    metric: "p99",
    direction: Direction::LowerIsBetter,
    warn: 0.05,
    fail: 0.20,
};

/// The relative change from `baseline` to `candidate` (`+0.1` = 10% larger). 0 when the
/// baseline is zero or a value is not finite, so a degenerate input never fails a gate.
pub fn change(baseline: f64, candidate: f64) -> f64 {
    let c = candidate / baseline - 1.0;
    if baseline == 0.0 || !c.is_finite() {
        0.0
    } else {
        c
    }
}

impl Gate {
    /// Judges a candidate value against the baseline value.
    pub fn judge(&self, baseline: f64, candidate: f64) -> Verdict {
        let c = change(baseline, candidate);
        let regression = match self.direction {
            Direction::HigherIsBetter => -c,
            Direction::LowerIsBetter => c,
        };
        // The epsilon keeps exact boundary values (e.g. −10.0%) on the failing side despite
        // floating-point rounding.
        if regression >= self.fail - 1e-9 {
            Verdict::Fail
        } else if regression >= self.warn - 1e-9 {
            Verdict::Warn
        } else {
            Verdict::Pass
        }
    }
}

/// The medians of one side of a comparison row.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Side {
    /// Median requests per second.
    pub rps: f64,
    /// Coefficient of variation of the RPS over the repetitions.
    pub rps_cv: f64,
    /// Median P95 latency.
    pub p95: f64,
    /// Median P99 latency.
    pub p99: f64,
}

/// The verdicts for one (case, connections) row of a comparison.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RowVerdict {
    /// Throughput gate.
    pub rps: Verdict,
    /// P95 gate.
    pub p95: Verdict,
    /// P99 gate.
    pub p99: Verdict,
    /// The row's overall verdict: `Unstable` when either side's CV is over the limit, else the
    /// worst gate.
    pub overall: Verdict,
}

/// Applies all three gates to a row.
pub fn judge_row(baseline: &Side, candidate: &Side) -> RowVerdict {
    let rps = THROUGHPUT.judge(baseline.rps, candidate.rps);
    let p95 = P95.judge(baseline.p95, candidate.p95);
    let p99 = P99.judge(baseline.p99, candidate.p99);
    let unstable = baseline.rps_cv > super::UNSTABLE_CV || candidate.rps_cv > super::UNSTABLE_CV;
    let overall = if unstable {
        Verdict::Unstable
    } else {
        rps.max(p95).max(p99)
    };
    RowVerdict {
        rps,
        p95,
        p99,
        overall,
    }
}

/// The verdict of a whole comparison: any failing row fails it; otherwise any unstable row
/// makes it unstable; otherwise the worst of pass/warn. An empty comparison is unstable
/// (nothing was judged).
pub fn overall(rows: &[RowVerdict]) -> Verdict {
    let any = |v: Verdict| rows.iter().any(|r| r.overall == v);
    if rows.is_empty() {
        Verdict::Unstable
    } else if any(Verdict::Fail) {
        Verdict::Fail
    } else if any(Verdict::Unstable) {
        Verdict::Unstable
    } else if any(Verdict::Warn) {
        Verdict::Warn
    } else {
        Verdict::Pass
    }
}
