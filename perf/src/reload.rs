//! `sluice-perf reload`: the large-config benchmark (issue "config store"). It generates Kong's
//! large scenario (10,000 routes and consumers, key-auth and request-termination on every route),
//! starts a sluice binary with it, and reports, next to their goals:
//! - `POST /config` latency as the node reports it (`X-Kong-Admin-Latency`), and the parse /
//!   compile / commit split from the node's `configuration loaded` log line;
//! - RPS while the same config is re-posted every `--interval` under load, relative to steady
//!   RPS in the same run, and the failed requests during it;
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

    progress(format!("{} timed POST /config", args.posts));
    let posts: Vec<Posted> = (0..args.posts)
        .map(|_| post_config(admin, &body))
        .collect::<Result<_>>()?;
    let bad = posts.iter().filter(|p| p.status != 201).count();
    if bad > 0 {
        bail!(
            "{bad} POST /config calls did not answer 201; see {}",
            running.log.display()
        );
    }
    let latencies: Vec<f64> = posts.iter().filter_map(|p| p.admin_latency_ms).collect();
    let walls: Vec<f64> = posts.iter().map(|p| p.wall_ms).collect();
    lines.push(format!(
        "POST /config X-Kong-Admin-Latency: median {:.0} ms, max {:.0} ms (client wall median {:.0} ms) — goal ≤ 500 ms",
        median(&latencies),
        latencies.iter().cloned().fold(0.0, f64::max),
        median(&walls)
    ));
    lines.push(format!(
        "node's split (last load): {}",
        load_split(&running.log)
    ));

    let rss_right_after = rss(running.pid());
    std::thread::sleep(SETTLE);
    let rss_loaded = rss(running.pid());
    lines.push(format!(
        "RSS with the config loaded: {rss_loaded} ({rss_right_after} right after the last reply) — goal ≤ 150 MB"
    ));

    progress(format!("steady load, {} s", args.load_secs));
    let spec = load_spec(args, &case, &out);
    let steady = driver.run_load(&running, &spec)?;
    progress(format!(
        "load with a re-post every {} s, {} s",
        args.interval, args.load_secs
    ));
    let interval = Duration::from_secs_f64(args.interval);
    let (reloading, reposts) =
        load_while_reposting(&mut driver, &running, &spec, admin, &body, interval)?;
    let ratio = reloading.rps / steady.rps.max(1.0);
    lines.push(format!(
        "RPS steady {:.0}, while re-posting ({} posts) {:.0}: ratio {:.3} — goal ≥ 0.95; failed requests during reloads: {} socket errors, {} non-2xx — goal 0",
        steady.rps, reposts, reloading.rps, ratio, reloading.errors, reloading.non_2xx
    ));

    progress(format!("{} reloads for the RSS trend", args.reloads));
    let before = rss_kib(running.pid());
    for _ in 0..args.reloads {
        post_config(admin, &body)?;
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
        "# sluice-perf reload\n\n{}\n",
        lines.iter().map(|l| format!("- {l}\n")).collect::<String>()
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

/// Runs the load while another thread re-posts the config every `interval` (the soak uses it too).
pub(crate) fn load_while_reposting(
    driver: &mut Local,
    running: &Running,
    spec: &LoadSpec,
    admin: SocketAddr,
    body: &[u8],
    interval: Duration,
) -> Result<(LoadResult, usize)> {
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        let poster = s.spawn(|| -> Result<usize> {
            let mut n = 0;
            let mut next = Instant::now() + interval;
            while !done.load(Ordering::Relaxed) {
                if Instant::now() >= next {
                    let p = post_config(admin, body)?;
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
            .map_err(|_| anyhow::anyhow!("the posting thread panicked"))??;
        Ok((result?, posts))
    })
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
