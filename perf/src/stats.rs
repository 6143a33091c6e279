//! Statistics over repeated runs, and Kong's release gates for comparing two versions.

use serde::Serialize;

/// Summary of one metric over repetitions.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Summary {
    pub mean: f64,
    pub median: f64,
    pub min: f64,
    pub max: f64,
    /// Coefficient of variation (stddev / mean), 0 for one sample.
    pub cv: f64,
}

pub fn summarize(values: &[f64]) -> Summary {
    if values.is_empty() {
        return Summary {
            mean: 0.0,
            median: 0.0,
            min: 0.0,
            max: 0.0,
            cv: 0.0,
        };
    }
    let mut v = values.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    let median = if v.len() % 2 == 1 {
        v[v.len() / 2]
    } else {
        (v[v.len() / 2 - 1] + v[v.len() / 2]) / 2.0
    };
    let var = if v.len() > 1 {
        v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)
    } else {
        0.0
    };
    let cv = if mean > 0.0 { var.sqrt() / mean } else { 0.0 };
    Summary {
        mean,
        median,
        min: v[0],
        max: v[v.len() - 1],
        cv,
    }
}

/// A gate's outcome, from best to worst.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub enum Verdict {
    Pass,
    Warn,
    /// Too noisy to judge (CV above 15%).
    Unstable,
    Fail,
}

/// Kong's release gates on B relative to A (medians): throughput −5% warn / −10% fail; P95 +5% / +15%;
/// P99 +5% / +20%; either side with a throughput CV above 15% is unstable.
pub fn gate(
    rps_a: Summary,
    rps_b: Summary,
    p95: (f64, f64),
    p99: (f64, f64),
) -> (Verdict, Vec<String>) {
    let mut notes = Vec::new();
    if rps_a.cv > 0.15 || rps_b.cv > 0.15 {
        notes.push(format!(
            "unstable: RPS CV {:.1}% / {:.1}%",
            rps_a.cv * 100.0,
            rps_b.cv * 100.0
        ));
        return (Verdict::Unstable, notes);
    }
    let mut verdict = Verdict::Pass;
    let mut judge = |name: &str, change: f64, warn: f64, fail: f64| {
        let v = if change >= fail {
            Verdict::Fail
        } else if change >= warn {
            Verdict::Warn
        } else {
            Verdict::Pass
        };
        if v != Verdict::Pass {
            notes.push(format!("{name} worse by {:.1}%", change * 100.0));
        }
        verdict = verdict.max(v);
    };
    let rel = |a: f64, b: f64| if a > 0.0 { (b - a) / a } else { 0.0 };
    judge("throughput", -rel(rps_a.median, rps_b.median), 0.05, 0.10);
    judge("p95", rel(p95.0, p95.1), 0.05, 0.15);
    judge("p99", rel(p99.0, p99.1), 0.05, 0.20);
    (verdict, notes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(median: f64, cv: f64) -> Summary {
        Summary {
            mean: median,
            median,
            min: median,
            max: median,
            cv,
        }
    }

    #[test]
    fn summary_statistics() {
        let x = summarize(&[10.0, 30.0, 20.0, 40.0]);
        assert_eq!((x.median, x.min, x.max, x.mean), (25.0, 10.0, 40.0, 25.0));
        assert!((x.cv - 0.5164).abs() < 1e-3);
        assert_eq!(summarize(&[5.0]).cv, 0.0);
        assert_eq!(summarize(&[]).median, 0.0);
    }

    #[test]
    fn kong_release_gates() {
        // (rps a, rps b, p95 a→b, p99 a→b, verdict)
        let table = [
            (100.0, 99.0, (1.0, 1.0), (1.0, 1.0), Verdict::Pass),
            (100.0, 94.0, (1.0, 1.0), (1.0, 1.0), Verdict::Warn),
            (100.0, 89.0, (1.0, 1.0), (1.0, 1.0), Verdict::Fail),
            (100.0, 100.0, (1.0, 1.10), (1.0, 1.0), Verdict::Warn),
            (100.0, 100.0, (1.0, 1.16), (1.0, 1.0), Verdict::Fail),
            (100.0, 100.0, (1.0, 1.0), (1.0, 1.19), Verdict::Warn),
            (100.0, 100.0, (1.0, 1.0), (1.0, 1.21), Verdict::Fail),
            (100.0, 130.0, (1.0, 0.5), (1.0, 0.5), Verdict::Pass),
        ];
        for (a, b, p95, p99, want) in table {
            assert_eq!(
                gate(s(a, 0.01), s(b, 0.01), p95, p99).0,
                want,
                "{a} {b} {p95:?} {p99:?}"
            );
        }
        assert_eq!(
            gate(s(100.0, 0.2), s(100.0, 0.01), (1.0, 1.0), (1.0, 1.0)).0,
            Verdict::Unstable
        );
    }
}
