//! `sluice-perf reload`: the large-config benchmark (issue "config store"). It generates Kong's
//! large scenario (10,000 routes and consumers, key-auth and request-termination on every route),
//! starts a sluice binary with it, and reports, next to their goals:
//! - `POST /config` latency as the node reports it (`X-Kong-Admin-Latency`), and the parse /
//!   compile / commit split from the node's `configuration loaded` log line;
//! - RPS while the config is re-posted every `--interval` under load, relative to steady RPS in
//!   the same run, and the failed requests during it;
//! - each of those for every `--change` mode: the same config re-posted (a GitOps loop posting an
//!   unchanged file), or two configs that differ in one route posted in turn (an edit);
//! - RSS with the config loaded, and after `--reloads` more reloads (flat = no growth per reload);
//! - cold start from the store (process start → `/status/ready` 200, no `--config`).

use crate::cases::{Case, CaseKind};
use crate::driver::{local::Local, Driver};
use crate::loadgen::LoadSpec;
use crate::procfs;
use crate::results::LoadResult;
use crate::target;
use crate::target::process::{self, free_addr, Launch, Running};
use crate::{progress, runner};
use anyhow::{bail, Context, Result};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How long RSS readings wait after a `POST /config` reply: right after it, the reply's body (as large
/// as the config, ~18 MB for the default one) may still be held while the server finishes the exchange.
const SETTLE: Duration = Duration::from_millis(500);

/// Options of `sluice-perf reload`.
#[derive(clap::Args, Debug, Clone)]
pub struct ReloadArgs {
    /// The sluice to measure: `bin:PATH` or `git:REF`.
    #[arg(long, default_value = "bin:target/release/sluice")]
    pub target: String,
    /// Routes (and consumers) of the generated config.
    #[arg(long, default_value_t = 10_000)]
    pub routes: usize,
    /// Timed `POST /config` calls.
    #[arg(long, default_value_t = 10)]
    pub posts: usize,
    /// Reloads between the two RSS readings.
    #[arg(long, default_value_t = 100)]
    pub reloads: usize,
    /// Seconds of load for the steady run and for the run with reloads.
    #[arg(long, default_value_t = 20)]
    pub load_secs: u64,
    /// Seconds between re-posts during the loaded run.
    #[arg(long, default_value_t = 2.0)]
    pub interval: f64,
    /// Load-generator connections.
    #[arg(long, default_value_t = 50)]
    pub connections: u32,
    /// Where the gateway and the rest (upstream, load) run.
    #[command(flatten)]
    pub cpus: crate::runner::Cpus,
    /// Where configs, logs and the report go.
    #[arg(long, default_value = "target/sluice-perf/reload")]
    pub out: PathBuf,
    /// What successive posts send, each mode measured in turn (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "same,one")]
    pub change: Vec<Change>,
}

/// What successive `POST /config` calls send.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// The same config every time: a GitOps loop re-posting an unchanged file.
    Same,
    /// In turn, the config with one route changed (one more path) and the config as started: each
    /// post differs from the live config in one entity.
    One,
}

impl Change {
    fn label(self) -> &'static str {
        match self {
            Change::Same => "same config",
            Change::One => "one route changed",
        }
    }
}

/// What one `--change` mode measured.
struct Measured {
    change: Change,
    latency: String,
    cpu_ms: f64,
    split: String,
    ratio: Option<(f64, LoadResult, usize)>,
}

/// One `POST /config` as the client saw it.
struct Posted {
    status: u16,
    admin_latency_ms: Option<f64>,
    wall_ms: f64,
}

/// Runs the benchmark and returns the Markdown report (also written to `out/reload.md`).
pub fn run(args: &ReloadArgs) -> Result<String> {
    let (out, bin) = target::sluice_in(&args.out, &args.target, "reload")?;
    let mut driver = args.cpus.driver()?;
    let upstream = driver.start_upstream(2)?;
    let case = Case::new(CaseKind::Large, Some(args.routes), None);
    let config = runner::write_config(&case, &upstream, &out.join("configs"))?;
    let body = std::fs::read(&config)?;
    let dir = out.join("sluice");
    let _ = std::fs::remove_dir_all(&dir);
    let prefix = driver.gateway_prefix();
    let launch = Launch {
        prefix: &prefix,
        proxy: free_addr("127.0.0.1")?,
        upstream: &upstream,
        workers: driver.workers(),
        dir: &dir,
        tls: None,
    };
    let mut lines = vec![format!(
        "config: {} ({} KB), sluice `{}`, gateway CPUs {}, load CPUs {}",
        case,
        body.len() / 1024,
        args.target,
        args.cpus.gateway_cpus,
        args.cpus.load_cpus
    )];

    progress("starting sluice with the large config");
    let started = Instant::now();
    let running = process::start_sluice(&bin, Some(&config), &launch, "info")?;
    lines.push(format!(
        "first start with --config to ready: {:.0} ms",
        started.elapsed().as_secs_f64() * 1e3
    ));
    driver.check_gateway_pinning(running.pid(), "sluice");
    let admin = running.admin.context("sluice has an admin address")?;

    let bodies = Bodies::new(body)?;
    let mut measured: Vec<Measured> = Vec::new();
    for &change in &args.change {
        progress(format!(
            "{} timed POST /config ({})",
            args.posts,
            change.label()
        ));
        measured.push(timed_posts(args, change, &bodies, &running, admin)?);
    }

    let rss_right_after = rss(running.pid());
    std::thread::sleep(SETTLE);
    let rss_loaded = rss(running.pid());
    lines.push(format!(
        "RSS with the config loaded: {rss_loaded} ({rss_right_after} right after the last reply) — goal ≤ 150 MB"
    ));

    progress(format!("steady load, {} s", args.load_secs));
    let spec = load_spec(args, &case, &out);
    let steady = driver.run_load(&running, &spec)?;
    for m in &mut measured {
        progress(format!(
            "load with a re-post every {} s ({}), {} s",
            args.interval,
            m.change.label(),
            args.load_secs
        ));
        let interval = Duration::from_secs_f64(args.interval);
        let (reloading, reposts) = load_while_posting(
            &mut driver,
            &running,
            &spec,
            admin,
            bodies.of(m.change),
            interval,
        )?;
        m.ratio = Some((reloading.rps / steady.rps.max(1.0), reloading, reposts));
    }
    lines.push(format!("steady RPS {:.0}", steady.rps));

    progress(format!("{} reloads for the RSS trend", args.reloads));
    let before = rss_kib(running.pid());
    for _ in 0..args.reloads {
        post_config(admin, &bodies.a)?;
    }
    let after = rss_kib(running.pid());
    std::thread::sleep(SETTLE);
    let settled = rss_kib(running.pid());
    lines.push(format!(
        "RSS across {} reloads: {} → {} KiB ({:+.1}%) right after the last reply, {} KiB ({:+.1}%) 0.5 s later — goal flat",
        args.reloads,
        before,
        after,
        (after as f64 / before.max(1) as f64 - 1.0) * 100.0,
        settled,
        (settled as f64 / before.max(1) as f64 - 1.0) * 100.0
    ));
    drop(running);

    progress("cold start from the store");
    let started = Instant::now();
    let restarted = process::start_sluice(&bin, None, &launch, "info")?;
    lines.push(format!(
        "cold start from the store (spawn → /status/ready 200): {:.0} ms — goal ≤ 300 ms; RSS then {}",
        started.elapsed().as_secs_f64() * 1e3,
        rss(restarted.pid())
    ));
    drop(restarted);

    let report = format!(
        "# sluice-perf reload\n\n{}\n{}",
        lines.iter().map(|l| format!("- {l}\n")).collect::<String>(),
        table(&measured)
    );
    std::fs::write(out.join("reload.md"), &report)?;
    Ok(report)
}

fn load_spec(args: &ReloadArgs, case: &Case, out: &Path) -> LoadSpec {
    LoadSpec {
        base_url: String::new(),
        case: *case,
        connections: args.connections,
        threads: 1,
        duration: Duration::from_secs(args.load_secs),
        rate: None,
        cpus: None,
        work_dir: out.to_path_buf(),
        streams: 1,
        upstream: None,
    }
}

/// The generated config (`a`) and the same with one route changed (`b`).
struct Bodies {
    a: Vec<u8>,
    /// `b` then `a`: posted in turn, each differs from the one live before it in one route.
    changed: [Vec<u8>; 2],
}

impl Bodies {
    /// `b` gives the last route of the first service one more path; the load keeps matching it.
    fn new(a: Vec<u8>) -> Result<Bodies> {
        let mut doc: serde_json::Value = serde_json::from_slice(&a)?;
        let route = doc["services"][0]["routes"]
            .as_array_mut()
            .and_then(|routes| routes.last_mut())
            .context("the generated config has a route")?;
        let first = route["paths"][0].as_str().unwrap_or("/").to_string();
        route["paths"] = serde_json::json!([first, format!("{first}-changed")]);
        let b = serde_json::to_vec(&doc)?;
        Ok(Bodies {
            changed: [b, a.clone()],
            a,
        })
    }

    /// The bodies successive posts of `change` cycle through; the last is the config as started.
    fn of(&self, change: Change) -> &[Vec<u8>] {
        match change {
            Change::Same => std::slice::from_ref(&self.a),
            Change::One => &self.changed,
        }
    }
}

/// `args.posts` timed posts of `change` (an even count for `one`, so the config as started is live
/// after them), with the node's CPU time per post.
fn timed_posts(
    args: &ReloadArgs,
    change: Change,
    bodies: &Bodies,
    running: &Running,
    admin: SocketAddr,
) -> Result<Measured> {
    let cycle = bodies.of(change);
    let n = args.posts.div_ceil(cycle.len()) * cycle.len();
    let cpu_before = procfs::cpu_seconds(running.pid()).unwrap_or(0.0);
    let posts: Vec<Posted> = cycle
        .iter()
        .cycle()
        .take(n)
        .map(|body| post_config(admin, body))
        .collect::<Result<_>>()?;
    let cpu = procfs::cpu_seconds(running.pid()).unwrap_or(0.0) - cpu_before;
    let bad = posts.iter().filter(|p| p.status != 201).count();
    if bad > 0 {
        bail!(
            "{bad} POST /config calls did not answer 201; see {}",
            running.log.display()
        );
    }
    let latencies: Vec<f64> = posts.iter().filter_map(|p| p.admin_latency_ms).collect();
    let walls: Vec<f64> = posts.iter().map(|p| p.wall_ms).collect();
    Ok(Measured {
        change,
        latency: format!(
            "{:.0} / {:.0} ms (client wall median {:.0} ms)",
            median(&latencies),
            latencies.iter().cloned().fold(0.0, f64::max),
            median(&walls)
        ),
        cpu_ms: cpu * 1e3 / n as f64,
        split: load_split(&running.log),
        ratio: None,
    })
}

/// The figures of every `--change` mode side by side, next to their goals.
fn table(measured: &[Measured]) -> String {
    let mut t = String::from("| figure |");
    for m in measured {
        t.push_str(&format!(" {} |", m.change.label()));
    }
    t.push_str(" goal |\n|---|");
    t.push_str(&"---|".repeat(measured.len() + 1));
    t.push('\n');
    let mut row = |name: &str, cell: &dyn Fn(&Measured) -> String, goal: &str| {
        t.push_str(&format!("| {name} |"));
        for m in measured {
            t.push_str(&format!(" {} |", cell(m)));
        }
        t.push_str(&format!(" {goal} |\n"));
    };
    row(
        "`POST /config` (X-Kong-Admin-Latency), median / max",
        &|m| m.latency.clone(),
        "≤ 500 ms",
    );
    row(
        "node CPU per post (utime + stime, no load)",
        &|m| format!("{:.0} ms", m.cpu_ms),
        "",
    );
    row("node's split (last post)", &|m| m.split.clone(), "");
    row(
        "RPS while posting every interval / steady",
        &|m| match &m.ratio {
            Some((r, l, n)) => format!("{r:.3} ({:.0} RPS, {n} posts)", l.rps),
            None => "-".into(),
        },
        "≥ 0.95",
    );
    row(
        "failed requests meanwhile (socket errors / non-2xx)",
        &|m| match &m.ratio {
            Some((_, l, _)) => format!("{} / {}", l.errors, l.non_2xx),
            None => "-".into(),
        },
        "0",
    );
    t
}

/// Runs the load while another thread re-posts the config every `interval` (the soak uses it too).
pub(crate) fn load_while_reposting(
    driver: &mut Local,
    running: &Running,
    spec: &LoadSpec,
    admin: SocketAddr,
    body: &[u8],
    interval: Duration,
) -> Result<(LoadResult, usize)> {
    let body = [body.to_vec()];
    load_while_posting(driver, running, spec, admin, &body, interval)
}

/// Runs the load while another thread posts `bodies` in turn every `interval`, then posts the last
/// one if the cycle ended elsewhere (so the config as started is live after it).
fn load_while_posting(
    driver: &mut Local,
    running: &Running,
    spec: &LoadSpec,
    admin: SocketAddr,
    bodies: &[Vec<u8>],
    interval: Duration,
) -> Result<(LoadResult, usize)> {
    let done = AtomicBool::new(false);
    let (result, posts) = std::thread::scope(|s| {
        let poster = s.spawn(|| -> Result<usize> {
            let mut n = 0;
            let mut next = Instant::now() + interval;
            while !done.load(Ordering::Relaxed) {
                if Instant::now() >= next {
                    let p = post_config(admin, &bodies[n % bodies.len()])?;
                    if p.status != 201 {
                        bail!("POST /config answered {} during the load", p.status);
                    }
                    n += 1;
                    next += interval;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            Ok(n)
        });
        let result = driver.run_load(running, spec);
        done.store(true, Ordering::Relaxed);
        let posts = poster
            .join()
            .map_err(|_| anyhow::anyhow!("the posting thread panicked"))?;
        anyhow::Ok((result, posts?))
    })?;
    if posts % bodies.len() != 0 {
        post_config(admin, &bodies[bodies.len() - 1])?;
    }
    Ok((result?, posts))
}

/// `POST /config` with a JSON body; reads the whole reply.
fn post_config(admin: SocketAddr, body: &[u8]) -> Result<Posted> {
    let started = Instant::now();
    let mut s = TcpStream::connect(admin)?;
    s.set_read_timeout(Some(Duration::from_secs(60)))?;
    write!(
        s,
        "POST /config HTTP/1.1\r\nHost: perf\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )?;
    s.write_all(body)?;
    let mut reader = BufReader::new(s);
    let mut status_line = String::new();
    reader.read_line(&mut status_line)?;
    let status = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .with_context(|| format!("bad status line {status_line:?}"))?;
    let mut admin_latency_ms = None;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 || line == "\r\n" {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            if name.eq_ignore_ascii_case("x-kong-admin-latency") {
                admin_latency_ms = value.trim().parse().ok();
            }
        }
    }
    std::io::copy(&mut reader.take(u64::MAX), &mut std::io::sink())?;
    Ok(Posted {
        status,
        admin_latency_ms,
        wall_ms: started.elapsed().as_secs_f64() * 1e3,
    })
}

/// The `parse_ms`/`compile_ms`/`commit_ms` fields of the node's last `configuration loaded` line.
pub(crate) fn load_split(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let Some(line) = text
        .lines()
        .rev()
        .find(|l| l.contains("configuration loaded"))
    else {
        return "no `configuration loaded` line in the log".into();
    };
    let plain = strip_ansi(line);
    ["parse_ms", "compile_ms", "commit_ms", "total_ms"]
        .iter()
        .filter_map(|k| {
            let rest = plain.split(&format!("{k}=")).nth(1)?;
            let v: f64 = rest.split_whitespace().next()?.parse().ok()?;
            Some(format!("{} {v:.0} ms", k.trim_end_matches("_ms")))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

pub(crate) fn strip_ansi(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

pub(crate) fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    procfs::status_kib(&status, "VmRSS").unwrap_or(0)
}

/// RSS with its heap (anonymous) and file-backed (LMDB map, binary) parts.
fn rss(pid: u32) -> String {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let mb = |f: &str| procfs::status_kib(&status, f).unwrap_or(0) as f64 / 1024.0;
    format!(
        "{:.0} MB ({:.0} MB heap, {:.0} MB file-backed)",
        mb("VmRSS"),
        mb("RssAnon"),
        mb("RssFile")
    )
}

fn median(xs: &[f64]) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}
