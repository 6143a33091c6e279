//! Result statistics and Kong's release gates, as tables of inputs and expected outputs.

use sluice_perf::compare;
use sluice_perf::results::{combine, Latency, LoadResult, Sample};
use sluice_perf::stats::gates::{self, judge_row, Side, Verdict, P95, P99, THROUGHPUT};
use sluice_perf::stats::{cv, median, ratio, Summary};

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-3
}

#[test]
fn medians() {
    let table: &[(&[f64], Option<f64>)] = &[
        (&[], None),
        (&[5.0], Some(5.0)),
        (&[3.0, 1.0, 2.0], Some(2.0)),
        (&[10.0, 30.0, 20.0, 40.0], Some(25.0)),
        (&[1.0, 1.0, 100.0], Some(1.0)),
    ];
    for (input, want) in table {
        assert_eq!(median(input), *want, "{input:?}");
    }
}

#[test]
fn coefficients_of_variation() {
    let table: &[(&[f64], f64)] = &[
        (&[], 0.0),
        (&[7.0], 0.0),
        (&[10.0, 10.0, 10.0], 0.0),
        (&[10.0, 30.0, 20.0, 40.0], 0.5164),
        (&[90.0, 100.0, 110.0], 0.1),
        (&[0.0, 0.0], 0.0),
    ];
    for (input, want) in table {
        assert!(
            close(cv(input), *want),
            "{input:?}: {} != {want}",
            cv(input)
        );
    }
}

#[test]
fn summaries() {
    let s = Summary::of(&[30.0, 10.0, f64::NAN, 20.0]).unwrap();
    assert_eq!(
        (s.n, s.min, s.median, s.max, s.mean),
        (3, 10.0, 20.0, 30.0, 20.0)
    );
    assert!(close(s.cv, 0.5));
    assert!(s.unstable());
    assert!(Summary::of(&[]).is_none());
    assert!(Summary::of(&[f64::NAN]).is_none());
    assert!(!Summary::of(&[100.0, 101.0]).unwrap().unstable());
    assert_eq!(ratio(50.0, 100.0), Some(0.5));
    assert_eq!(ratio(1.0, 0.0), None);
}

#[test]
fn single_gates() {
    // (gate, baseline, candidate, verdict)
    let table = [
        (THROUGHPUT, 100.0, 101.0, Verdict::Pass),
        (THROUGHPUT, 100.0, 95.1, Verdict::Pass),
        (THROUGHPUT, 100.0, 95.0, Verdict::Warn),
        (THROUGHPUT, 100.0, 90.1, Verdict::Warn),
        (THROUGHPUT, 100.0, 90.0, Verdict::Fail),
        (THROUGHPUT, 100.0, 50.0, Verdict::Fail),
        (THROUGHPUT, 0.0, 50.0, Verdict::Pass),
        (P95, 1.0, 1.04, Verdict::Pass),
        (P95, 1.0, 1.05, Verdict::Warn),
        (P95, 1.0, 1.14, Verdict::Warn),
        (P95, 1.0, 1.15, Verdict::Fail),
        (P95, 1.0, 0.5, Verdict::Pass),
        (P99, 2.0, 2.1, Verdict::Warn),
        (P99, 2.0, 2.39, Verdict::Warn),
        (P99, 2.0, 2.4, Verdict::Fail),
    ];
    for (gate, a, b, want) in table {
        assert_eq!(gate.judge(a, b), want, "{} {a} -> {b}", gate.metric);
    }
}

fn side(rps: f64, cv: f64, p95: f64, p99: f64) -> Side {
    Side {
        rps,
        rps_cv: cv,
        p95,
        p99,
    }
}

#[test]
fn rows_and_overall_verdicts() {
    let base = side(100.0, 0.02, 1.0, 2.0);
    // (candidate, row verdict)
    let table = [
        (side(100.0, 0.02, 1.0, 2.0), Verdict::Pass),
        (side(94.0, 0.02, 1.0, 2.0), Verdict::Warn),
        (side(100.0, 0.02, 1.2, 2.0), Verdict::Fail),
        (side(100.0, 0.02, 1.0, 2.5), Verdict::Fail),
        (side(80.0, 0.20, 1.0, 2.0), Verdict::Unstable),
    ];
    for (cand, want) in table {
        assert_eq!(judge_row(&base, &cand).overall, want, "{cand:?}");
    }
    let row = |c: Side| judge_row(&base, &c);
    let pass = row(base);
    let warn = row(side(94.0, 0.02, 1.0, 2.0));
    let fail = row(side(50.0, 0.02, 1.0, 2.0));
    let unstable = row(side(100.0, 0.3, 1.0, 2.0));
    let table: &[(&[_], Verdict)] = &[
        (&[], Verdict::Unstable),
        (&[pass, pass], Verdict::Pass),
        (&[pass, warn], Verdict::Warn),
        (&[warn, unstable], Verdict::Unstable),
        (&[unstable, fail], Verdict::Fail),
    ];
    for (rows, want) in table {
        assert_eq!(gates::overall(rows), *want);
    }
    let codes = [
        (Verdict::Pass, 0),
        (Verdict::Warn, 0),
        (Verdict::Fail, 1),
        (Verdict::Unstable, 2),
    ];
    for (v, code) in codes {
        assert_eq!(v.exit_code(), code);
    }
}

fn sample(target: &str, rps: f64, p99: f64) -> Sample {
    Sample {
        case: "no-plugins@1".into(),
        target: target.into(),
        connections: 50,
        rep: 1,
        load: LoadResult {
            requests: 10,
            duration_s: 1.0,
            rps,
            latency: Latency {
                p50: 0.5,
                p95: 1.0,
                p99,
                max: 5.0,
            },
            errors: 1,
            non_2xx: 2,
        },
        cpu_us_per_req: Some(rps / 1000.0),
        faults_per_req: None,
        peak_rss_kib: Some(rps as u64),
    }
}

#[test]
fn combining_and_comparing_runs() {
    let samples = vec![
        sample("a", 100.0, 2.0),
        sample("b", 85.0, 2.0),
        sample("a", 102.0, 2.2),
        sample("b", 86.0, 2.1),
        sample("a", 98.0, 1.8),
        sample("b", 84.0, 2.0),
    ];
    let combined = combine(&samples);
    assert_eq!(combined.len(), 2);
    let a = &combined[0];
    assert_eq!(
        (a.target.as_str(), a.rps.n, a.rps.median, a.latency.p99),
        ("a", 3, 100.0, 2.0)
    );
    assert_eq!((a.errors, a.non_2xx, a.peak_rss_kib), (3, 6, Some(102)));
    assert_eq!(a.cpu_us_per_req, Some(0.1));
    let rows = compare::judge(&combined, "a", "b");
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].verdict.rps, Verdict::Fail);
    assert_eq!(compare::overall(&rows), Verdict::Fail);
    assert!(compare::table(&rows, "a", "b").contains("**FAIL**"));
    assert!(compare::judge(&combined, "a", "missing").is_empty());
}
