//! Combined results: JSON, a Markdown table with ratios, and an SVG bar chart.

use crate::stats::{summarize, Summary};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One repetition of one (case, target, connections).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Run {
    pub case: String,
    pub target: String,
    pub connections: usize,
    pub rep: usize,
    pub rps: f64,
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    pub errors: u64,
    pub non2xx: u64,
    /// Gateway CPU time per request, microseconds.
    pub cpu_us_per_req: f64,
    pub peak_rss_kb: u64,
}

/// The runs of one (case, target, connections), combined.
#[derive(Debug, Clone, Serialize)]
pub struct Combined {
    pub case: String,
    pub target: String,
    pub connections: usize,
    pub rps: Summary,
    pub p95_ms: f64,
    pub p99_ms: f64,
    pub cpu_us_per_req: f64,
    pub peak_rss_kb: u64,
    pub errors: u64,
    pub non2xx: u64,
}

pub fn combine(runs: &[Run]) -> Vec<Combined> {
    let mut groups: BTreeMap<(String, String, usize), Vec<&Run>> = BTreeMap::new();
    for r in runs {
        groups
            .entry((r.case.clone(), r.target.clone(), r.connections))
            .or_default()
            .push(r);
    }
    let median = |v: Vec<f64>| summarize(&v).median;
    groups
        .into_iter()
        .map(|((case, target, connections), rs)| Combined {
            rps: summarize(&rs.iter().map(|r| r.rps).collect::<Vec<_>>()),
            p95_ms: median(rs.iter().map(|r| r.p95_ms).collect()),
            p99_ms: median(rs.iter().map(|r| r.p99_ms).collect()),
            cpu_us_per_req: median(rs.iter().map(|r| r.cpu_us_per_req).collect()),
            peak_rss_kb: rs.iter().map(|r| r.peak_rss_kb).max().unwrap_or(0),
            errors: rs.iter().map(|r| r.errors).sum(),
            non2xx: rs.iter().map(|r| r.non2xx).sum(),
            case,
            target,
            connections,
        })
        .collect()
}

/// The Markdown report: one row per combination, with ratios to nginx and to the same target's no-plugin case.
pub fn markdown(combined: &[Combined], command: &str) -> String {
    let find = |case_prefix: &str, target: &str, c: usize| {
        combined
            .iter()
            .find(|x| x.case.starts_with(case_prefix) && x.target == target && x.connections == c)
    };
    let mut out = format!("Command: `{command}`\n\n");
    out.push_str("| case | target | conns | RPS median | min–max | CV | p95 ms | p99 ms | CPU µs/req | peak RSS MB | errors | non-2xx | vs nginx | vs no-plugins |\n");
    out.push_str("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for x in combined {
        let n = x.case.split('@').nth(1).unwrap_or("1");
        let vs_nginx = find("no-plugins", "nginx", x.connections)
            .filter(|_| x.case.starts_with("no-plugins"))
            .map_or("—".into(), |b| {
                format!("{:.2}", x.rps.median / b.rps.median.max(1.0))
            });
        let vs_base = find(&format!("no-plugins@{n}"), &x.target, x.connections)
            .filter(|_| !x.case.starts_with("no-plugins"))
            .map_or("—".into(), |b| {
                format!("{:.2}", x.rps.median / b.rps.median.max(1.0))
            });
        out.push_str(&format!(
            "| {} | {} | {} | {:.0} | {:.0}–{:.0} | {:.1}% | {:.2} | {:.2} | {:.1} | {:.1} | {} | {} | {} | {} |\n",
            x.case,
            x.target,
            x.connections,
            x.rps.median,
            x.rps.min,
            x.rps.max,
            x.rps.cv * 100.0,
            x.p95_ms,
            x.p99_ms,
            x.cpu_us_per_req,
            x.peak_rss_kb as f64 / 1024.0,
            x.errors,
            x.non2xx,
            vs_nginx,
            vs_base
        ));
    }
    out
}

/// A grouped bar chart of median RPS per case and target (hand-written SVG).
pub fn svg(combined: &[Combined]) -> String {
    let max = combined.iter().map(|c| c.rps.median).fold(1.0, f64::max);
    let (bar, gap, height) = (18.0, 6.0, 300.0);
    let width = 80.0 + combined.len() as f64 * (bar + gap);
    let mut out = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{}\" font-family=\"sans-serif\" font-size=\"10\">\n<text x=\"10\" y=\"14\">median RPS per case / target / connections</text>\n",
        height + 160.0
    );
    let colors = ["#2b7bb9", "#e07b39", "#3aa655", "#9b59b6", "#c0392b"];
    let mut targets: Vec<&str> = combined.iter().map(|c| c.target.as_str()).collect();
    targets.dedup();
    for (i, c) in combined.iter().enumerate() {
        let h = c.rps.median / max * height;
        let x = 60.0 + i as f64 * (bar + gap);
        let color = colors[targets.iter().position(|t| *t == c.target).unwrap_or(0) % colors.len()];
        out.push_str(&format!(
            "<rect x=\"{x}\" y=\"{}\" width=\"{bar}\" height=\"{h}\" fill=\"{color}\"><title>{} {} c={}: {:.0} rps, p99 {:.2} ms</title></rect>\n",
            20.0 + height - h,
            c.case,
            c.target,
            c.connections,
            c.rps.median,
            c.p99_ms
        ));
        out.push_str(&format!(
            "<text transform=\"translate({},{}) rotate(60)\">{} {} c{}</text>\n",
            x + 4.0,
            height + 26.0,
            c.case,
            c.target.rsplit('/').next().unwrap_or(""),
            c.connections
        ));
    }
    out.push_str(&format!("<text x=\"4\" y=\"24\">{max:.0}</text>\n</svg>\n"));
    out
}
