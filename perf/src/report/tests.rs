use super::*;
use crate::results::{Latency, LoadResult, Meta, Results, Sample};

fn sample(case: &str, target: &str, rps: f64) -> Sample {
    Sample {
        case: case.into(),
        target: target.into(),
        connections: 50,
        rep: 1,
        load: LoadResult {
            requests: 1000,
            duration_s: 1.0,
            rps,
            latency: Latency {
                p50: 1.0,
                p95: 2.0,
                p99: 3.0,
                max: 9.0,
            },
            errors: 0,
            non_2xx: 0,
        },
        cpu_us_per_req: Some(20.0),
        faults_per_req: Some(0.5),
        peak_rss_kib: Some(2048),
    }
}

fn results() -> Results {
    let samples = vec![
        sample("no-plugins@1", "nginx", 50_000.0),
        sample("no-plugins@1", "bin:s", 40_000.0),
        sample("rate-limiting@1", "bin:s", 30_000.0),
    ];
    Results {
        meta: Meta {
            command: "sluice-perf run".into(),
            ..Default::default()
        },
        combined: combine(&samples),
        samples,
    }
}

#[test]
fn markdown_has_ratios_to_nginx_and_to_no_plugins() {
    let md = markdown(&results());
    let row = |needle: &str| {
        md.lines()
            .find(|l| l.starts_with(needle))
            .unwrap_or_default()
            .to_string()
    };
    let sluice = row("| no-plugins@1 | bin:s |");
    assert!(sluice.ends_with("| 0.80 | — |"), "{sluice}");
    let rl = row("| rate-limiting@1 | bin:s |");
    assert!(rl.ends_with("| 0.60 | 0.75 |"), "{rl}");
    assert!(row("| no-plugins@1 | nginx |").ends_with("| 1.00 | — |"));
}

#[test]
fn chart_has_a_bar_per_row_and_panel() {
    let svg = svg::chart(&results().combined);
    assert!(svg.starts_with("<svg"));
    assert!(svg.trim_end().ends_with("</svg>"));
    assert_eq!(svg.matches("<title>").count(), 6, "3 rows × 2 panels");
    assert!(svg::chart(&[]).contains("</svg>"));
    assert_eq!(svg::esc("a<b&\"c\">"), "a&lt;b&amp;&quot;c&quot;&gt;");
}

#[test]
fn rerender_recombines_from_samples() {
    let dir = tempfile::tempdir().unwrap();
    let mut r = results();
    r.combined.clear();
    std::fs::write(
        dir.path().join("results.json"),
        serde_json::to_string(&r).unwrap(),
    )
    .unwrap();
    let back = rerender(dir.path()).unwrap();
    assert_eq!(back.combined.len(), 3);
    assert!(std::fs::read_to_string(dir.path().join("results.md"))
        .unwrap()
        .contains("0.75"));
    assert!(dir.path().join("chart.svg").is_file());
    assert!(rerender(&dir.path().join("missing.json")).is_err());
}

#[test]
fn protocol_cases_compare_with_nginx_on_the_same_case() {
    let samples = vec![
        sample("no-plugins@1", "nginx", 50_000.0),
        sample("ws-echo@1", "nginx", 20_000.0),
        sample("ws-echo@1", "bin:s", 25_000.0),
        sample("grpc-unary@1", "bin:s", 10_000.0),
    ];
    let results = Results {
        combined: combine(&samples),
        samples,
        ..Default::default()
    };
    let md = markdown(&results);
    let row = |needle: &str| {
        md.lines()
            .find(|l| l.starts_with(needle))
            .unwrap_or_default()
    };
    assert!(
        row("| ws-echo@1 | bin:s |").ends_with("| 1.25 | — |"),
        "{md}"
    );
    // No nginx row of its own: never the no-plugins one.
    assert!(
        row("| grpc-unary@1 | bin:s |").ends_with("| — | — |"),
        "{md}"
    );
    assert!(md.contains("messages/s"), "{md}");
}
