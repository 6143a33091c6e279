//! Result records: one [`Sample`] per measured run, combined per (case, target, connections)
//! into [`Combined`] rows, all saved as `results.json` so `report` can re-render them.

use crate::stats::Summary;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// Latency percentiles of one run, in milliseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    /// Median.
    pub p50: f64,
    /// 95th percentile.
    pub p95: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Worst request.
    pub max: f64,
}

/// What the load generator measured in one run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LoadResult {
    /// Completed requests.
    pub requests: u64,
    /// Measured duration in seconds.
    pub duration_s: f64,
    /// Requests per second.
    pub rps: f64,
    /// Latency percentiles.
    pub latency: Latency,
    /// Socket errors (connect, read, write, timeout).
    pub errors: u64,
    /// Responses whose status is not 2xx/3xx.
    pub non_2xx: u64,
}

/// One measured run of one target on one case.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// Case label (`kind@routes`).
    pub case: String,
    /// Target label (`bin:...`, `git:...`, `nginx`, `nginx-lua`).
    pub target: String,
    /// Concurrent connections of the load generator.
    pub connections: u32,
    /// Repetition number, from 1.
    pub rep: u32,
    /// The load generator's figures.
    pub load: LoadResult,
    /// Gateway CPU time (user + system, all processes of the target) per request, in µs.
    pub cpu_us_per_req: Option<f64>,
    /// Gateway minor page faults per request (absent in results written before it was measured).
    #[serde(default)]
    pub faults_per_req: Option<f64>,
    /// Peak resident set (VmHWM, summed over the target's processes), in KiB.
    pub peak_rss_kib: Option<u64>,
}

/// All repetitions of one (case, target, connections), summarised.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Combined {
    /// Case label.
    pub case: String,
    /// Target label.
    pub target: String,
    /// Connections.
    pub connections: u32,
    /// RPS over the repetitions.
    pub rps: Summary,
    /// Median over repetitions of each latency percentile, in ms.
    pub latency: Latency,
    /// Total socket errors.
    pub errors: u64,
    /// Total non-2xx/3xx responses.
    pub non_2xx: u64,
    /// Median CPU µs per request.
    pub cpu_us_per_req: Option<f64>,
    /// Median minor page faults per request.
    #[serde(default)]
    pub faults_per_req: Option<f64>,
    /// Largest peak RSS seen, KiB.
    pub peak_rss_kib: Option<u64>,
}

/// The settings a run was made with, kept for the report header.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Meta {
    /// The command line.
    pub command: String,
    /// When the run started (seconds since the Unix epoch).
    pub started_unix: u64,
    /// Load mode: `max-throughput (wrk)` or `constant-rate R/s (oha)`.
    pub mode: String,
    /// Driver name.
    pub driver: String,
    /// Warnings raised during the run (pinning not granted, skipped targets...).
    pub notes: Vec<String>,
}

/// The content of `results.json`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Results {
    /// Run settings.
    pub meta: Meta,
    /// Every measured run, in execution order.
    pub samples: Vec<Sample>,
    /// Per (case, target, connections) summaries, recomputed from the samples.
    pub combined: Vec<Combined>,
}

/// Groups samples by (case, target, connections), in order of first appearance, and summarises
/// each group: RPS spread, median latencies and CPU, summed errors, largest RSS.
pub fn combine(samples: &[Sample]) -> Vec<Combined> {
    let mut order: Vec<(&str, &str, u32)> = Vec::new();
    let mut groups: HashMap<(&str, &str, u32), Vec<&Sample>> = HashMap::new();
    for s in samples {
        let key = (s.case.as_str(), s.target.as_str(), s.connections);
        groups.entry(key).or_insert_with(|| {
            order.push(key);
            Vec::new()
        });
        groups.entry(key).or_default().push(s);
    }
    order
        .into_iter()
        .filter_map(|key| {
            let group = groups.get(&key)?;
            let med = |f: fn(&Sample) -> f64| {
                crate::stats::median(&group.iter().map(|s| f(s)).collect::<Vec<_>>())
            };
            let cpu: Vec<f64> = group.iter().filter_map(|s| s.cpu_us_per_req).collect();
            let faults: Vec<f64> = group.iter().filter_map(|s| s.faults_per_req).collect();
            Some(Combined {
                case: key.0.to_string(),
                target: key.1.to_string(),
                connections: key.2,
                rps: Summary::of(&group.iter().map(|s| s.load.rps).collect::<Vec<_>>())
                    .unwrap_or_default(),
                latency: Latency {
                    p50: med(|s| s.load.latency.p50).unwrap_or(0.0),
                    p95: med(|s| s.load.latency.p95).unwrap_or(0.0),
                    p99: med(|s| s.load.latency.p99).unwrap_or(0.0),
                    max: med(|s| s.load.latency.max).unwrap_or(0.0),
                },
                errors: group.iter().map(|s| s.load.errors).sum(),
                non_2xx: group.iter().map(|s| s.load.non_2xx).sum(),
                cpu_us_per_req: crate::stats::median(&cpu),
                faults_per_req: crate::stats::median(&faults),
                peak_rss_kib: group.iter().filter_map(|s| s.peak_rss_kib).max(),
            })
        })
        .collect()
}
