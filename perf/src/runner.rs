//! The `run` loop: start the upstream and every case's targets, warm up, measure every (case, target,
//! connections) in interleaved repetitions (cases and targets in turn: A, B, A, B, ...), and write the results.

mod args;
#[cfg(test)]
mod tests;

pub use args::{parse_duration, Cpus, RunArgs};

use crate::cases::{config, Case, Protocol};
use crate::driver::{Driver, Usage};
use crate::pin::{Pinned, REDIS};
use crate::results::{combine, LoadResult, Meta, Results, Sample};
use crate::target::process::Running;
use crate::target::{self, Resolved, Target};
use crate::{progress, report};
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};

/// Runs everything `args` asks for, writes `results.json`, `results.md` and `chart.svg` into the
/// results directory, and returns the results.
pub fn run(args: &RunArgs) -> Result<(Results, PathBuf)> {
    let plan = args.plan()?;
    let out = args.out_dir()?;
    let cache = args
        .cache
        .clone()
        .unwrap_or_else(target::git::default_cache);
    let resolved: Vec<Resolved> = plan
        .targets
        .iter()
        .map(|t| target::resolve(t, &args.repo, &cache))
        .collect::<Result<_>>()?;
    let mut driver = args.cpus.driver()?;
    if args.driver == "netns" {
        driver.use_namespaces()?;
    }
    if args.tls() {
        driver.use_tls(&out)?;
    }
    if cfg!(debug_assertions) {
        progress("warning: this is a debug build of sluice-perf; the built-in upstream will be the bottleneck");
    }
    progress(format!("results in {}", out.display()));
    let upstream = driver.start_upstream(args.body_size)?;
    let (_redis, redis_note) = pin_redis(args, &plan.cases)?;
    // Every case's targets start first, then each repetition measures every case in turn: a ratio between
    // cases (rl-redis ÷ rate-limiting) is as interleaved as one between targets, so a drift of the machine
    // over the run does not land on one case. An idle gateway waits on its sockets and costs nothing.
    let mut started = Vec::new();
    for case in &plan.cases {
        started.push(start_case(
            args,
            &mut driver,
            &resolved,
            case,
            &upstream,
            &out,
        )?);
    }
    let mut samples = Vec::new();
    for rep in 1..=args.reps {
        for (case, running) in plan.cases.iter().zip(&started) {
            samples.extend(measure(args, &mut driver, case, running, rep, &out)?);
        }
    }
    drop(started);
    let mut notes = driver.notes();
    notes.extend(redis_note);
    if cfg!(debug_assertions) {
        notes.push("sluice-perf is a debug build: its upstream is slow; build it with --release for real numbers".into());
    }
    if plan.targets.iter().any(Target::is_peer) && plan.cases.iter().any(|c| !c.peers_can_run()) {
        notes.push("nginx peers have no plugins: they ran the no-plugins cases only".into());
    }
    let results = Results {
        meta: Meta {
            command: std::env::args().collect::<Vec<_>>().join(" "),
            started_unix: plan.started_unix,
            mode: mode(args.rate, &plan.cases),
            driver: driver.name().into(),
            notes,
        },
        combined: combine(&samples),
        samples,
    };
    report::write(&out, &results)?;
    Ok((results, out))
}

/// Moves the local Redis onto `--redis-cpus` (default the load CPUs) when a case counts on it, for
/// the length of the run (see [`crate::pin`]): the guard, and the report's note (None without a Redis case).
fn pin_redis(args: &RunArgs, cases: &[Case]) -> Result<(Option<Pinned>, Option<String>)> {
    if !cases.iter().any(|c| c.kind.uses_redis()) {
        return Ok((None, None));
    }
    let cpus = args.redis_cpus.as_deref().unwrap_or(&args.cpus.load_cpus);
    let (host, port, _) = config::REDIS;
    if cpus == "off" {
        let note = format!("Redis {host}:{port} left on the CPUs it had (`--redis-cpus off`)");
        return Ok((None, Some(note)));
    }
    crate::procfs::parse_cpu_list(cpus).with_context(|| format!("bad CPU list `{cpus}`"))?;
    let pinned = Pinned::to(&REDIS, host, cpus, 0)?;
    let note = match pinned {
        Some(_) => format!(
            "Redis {host}:{port} moved to CPUs {cpus} for the run (it stands for another host)"
        ),
        None => format!("Redis {host}:{port}: no local redis-server process to move"),
    };
    Ok((pinned, Some(note)))
}

/// The report's load mode: which generators ran the cases, closed loop or at a constant rate.
pub fn mode(rate: Option<u32>, cases: &[Case]) -> String {
    if let Some(r) = rate {
        return format!("constant rate {r}/s (oha, latency-corrected)");
    }
    let mut generators = Vec::new();
    for case in cases {
        let g = match case.kind.protocol() {
            Protocol::Http => "wrk",
            Protocol::WebSocket => "sluice-perf ws-load",
            Protocol::Grpc => "h2load",
        };
        if !generators.contains(&g) {
            generators.push(g);
        }
    }
    format!("max throughput ({}, closed loop)", generators.join(", "))
}

/// What a run covers, parsed and checked up front so mistakes fail before anything starts.
pub struct Plan {
    /// Cases in order.
    pub cases: Vec<Case>,
    /// Targets in order (A, B, ...).
    pub targets: Vec<Target>,
    /// When the plan was made (Unix seconds).
    pub started_unix: u64,
}

/// Starts (and warms up) the targets that run `case`, each with its label.
fn start_case(
    args: &RunArgs,
    driver: &mut dyn Driver,
    resolved: &[Resolved],
    case: &Case,
    upstream: &str,
    out: &Path,
) -> Result<Vec<(String, Running)>> {
    let config_path = write_config(case, upstream, &out.join("configs"))?;
    let mut running: Vec<(String, Running)> = Vec::new();
    let all_labels = labels(resolved.iter().map(|r| &r.target));
    for (r, label) in resolved
        .iter()
        .zip(all_labels)
        .filter(|(r, _)| !r.target.is_peer() || case.peers_can_run())
    {
        progress(format!("[{case}] starting {label}"));
        let dir = out
            .join("targets")
            .join(case.file_stem())
            .join(slug(&label));
        let started = driver
            .start_target(r, case, &config_path, &dir)
            .with_context(|| format!("[{case}] {label}"))?;
        if !args.warmup.is_zero() {
            progress(format!(
                "[{case}] {label}: warming up for {:?}",
                args.warmup
            ));
            let spec = args.load_spec(
                case,
                args.connections.first().copied().unwrap_or(50),
                args.warmup,
                out,
            );
            driver
                .run_load(&started, &spec)
                .with_context(|| format!("[{case}] warming up {label}"))?;
        }
        running.push((label, started));
    }
    Ok(running)
}

/// Repetition `rep` of `case` on each of its running targets, at each connection count.
fn measure(
    args: &RunArgs,
    driver: &mut dyn Driver,
    case: &Case,
    running: &[(String, Running)],
    rep: u32,
    out: &Path,
) -> Result<Vec<Sample>> {
    let mut samples = Vec::new();
    for &connections in &args.connections {
        for (label, target) in running {
            let spec = args.load_spec(case, connections, args.duration, out);
            let before = driver.usage(target);
            let load = driver
                .run_load(target, &spec)
                .with_context(|| format!("[{case}] {label} c={connections}"))?;
            let after = driver.usage(target);
            let sample = sample(case, label, connections, rep, load, before, after);
            progress(format!(
                "[{case}] rep {rep}/{} c={connections} {label}: {:.0} rps, p99 {:.2} ms, {} µs CPU/req, {} faults/req, {} errors, {} non-2xx",
                args.reps,
                sample.load.rps,
                sample.load.latency.p99,
                sample.cpu_us_per_req.map_or("?".into(), |c| format!("{c:.1}")),
                sample.faults_per_req.map_or("?".into(), |f| format!("{f:.3}")),
                sample.load.errors,
                sample.load.non_2xx,
            ));
            samples.push(sample);
        }
    }
    Ok(samples)
}

/// Builds a sample from a load result and the target's usage before and after it.
pub fn sample(
    case: &Case,
    target: &str,
    connections: u32,
    rep: u32,
    load: LoadResult,
    before: Usage,
    after: Usage,
) -> Sample {
    // How much a counter grew over the run, per request served (None when unread or nothing was served).
    let per_request = |before: Option<f64>, after: Option<f64>| match (before, after) {
        (Some(b), Some(a)) if load.requests > 0 => Some((a - b).max(0.0) / load.requests as f64),
        _ => None,
    };
    let cpu_us_per_req = per_request(before.cpu_s, after.cpu_s).map(|s| s * 1e6);
    let faults = |u: &Usage| u.minor_faults.map(|f| f as f64);
    let faults_per_req = per_request(faults(&before), faults(&after));
    Sample {
        case: case.to_string(),
        target: target.to_string(),
        connections,
        rep,
        load,
        cpu_us_per_req,
        faults_per_req,
        peak_rss_kib: after.peak_rss_kib,
    }
}

/// Writes the case's declarative config (JSON for `large`, YAML otherwise) and returns its path.
pub fn write_config(case: &Case, upstream: &str, dir: &Path) -> Result<PathBuf> {
    std::fs::create_dir_all(dir)?;
    let format = if case.routes > 1000 {
        config::Format::Json
    } else {
        config::Format::Yaml
    };
    let ext = if format == config::Format::Json {
        "json"
    } else {
        "yml"
    };
    let path = dir.join(format!("{}.{ext}", case.file_stem()));
    std::fs::write(
        &path,
        config::render(&config::build(case, upstream), format)?,
    )?;
    Ok(path)
}

/// Result labels of targets in order: their command-line spelling, with `#2`, `#3`... added to
/// repeats so that a target compared with itself (an A/A noise check) keeps two series.
pub fn labels<'a>(targets: impl Iterator<Item = &'a Target>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for t in targets {
        let base = t.label();
        let n = out
            .iter()
            .filter(|l| **l == base || l.starts_with(&format!("{base}#")))
            .count();
        out.push(if n == 0 {
            base
        } else {
            format!("{base}#{}", n + 1)
        });
    }
    out
}

/// A label reduced to characters safe in a file name.
pub fn slug(label: &str) -> String {
    let s: String = label
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    s.trim_matches('_')
        .chars()
        .rev()
        .take(60)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect()
}

impl Plan {
    /// Checks the plan has something to do.
    pub fn validate(&self) -> Result<()> {
        if self.cases.is_empty() {
            bail!("no cases: give --suite kong8 or --case <name>");
        }
        if self.targets.is_empty() {
            bail!("no targets: give --target bin:<path>, git:<ref>, nginx or nginx-lua");
        }
        Ok(())
    }
}
