//! `sluice-perf conns`: what an idle connection costs a gateway (issue 26), for each target in the same
//! run and on the same machine: Sluice builds and nginx.
//!
//! For each mode (plain HTTP/1.1, HTTP/1.1 over TLS, HTTP/2 over TLS) and each target, it starts the
//! target with one worker on the gateway CPUs and then:
//! 1. measures the loaded p99 of `--load-connections` wrk connections, with no idle connections;
//! 2. reads the process tree's RSS, opens `--conns` connections (TLS and h2 handshakes done) and reads it
//!    again: the cost of a connected but silent client;
//! 3. sends one request on each and reads its response, keeping the connection open: the cost of an idle
//!    keep-alive client after a request;
//! 4. measures the loaded p99 again while the idle connections are held.
//!
//! RSS is `VmRSS` summed over the target's process tree (nginx's master and workers), read after
//! [`SETTLE`] so that freed memory has been returned.

pub(crate) mod client;

use crate::cases::{Case, CaseKind};
use crate::driver::{local::Local, Driver};
use crate::loadgen::LoadSpec;
use crate::procfs;
use crate::target::{self, Target};
use crate::{progress, runner};
use anyhow::{Context, Result};
use client::Mode;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Pause before each RSS reading.
const SETTLE: Duration = Duration::from_secs(1);

/// Options of `sluice-perf conns`.
#[derive(clap::Args, Debug, Clone)]
pub struct ConnsArgs {
    /// Targets to compare: `bin:PATH`, `git:REF` or `nginx` (repeatable).
    #[arg(long = "target", default_values_t = ["bin:target/release/sluice".to_string(), "nginx".to_string()])]
    pub targets: Vec<String>,
    /// Idle connections to open.
    #[arg(long, default_value_t = 3000)]
    pub conns: usize,
    /// Modes to measure: plain, tls, h2 (comma-separated).
    #[arg(long, value_delimiter = ',', default_values_t = [Mode::Plain, Mode::Tls, Mode::H2])]
    pub modes: Vec<Mode>,
    /// Seconds of loaded traffic before and while the idle connections are held (0: skip).
    #[arg(long, default_value_t = 5)]
    pub load_secs: u64,
    /// Loaded connections (wrk).
    #[arg(long, default_value_t = 50)]
    pub load_connections: u32,
    /// Where the gateway and the rest (upstream, load) run.
    #[command(flatten)]
    pub cpus: crate::runner::Cpus,
    /// Where configs, logs and the report go.
    #[arg(long, default_value = "target/sluice-perf/conns")]
    pub out: PathBuf,
}

/// One target in one mode.
struct Row {
    mode: Mode,
    target: String,
    silent_kib: f64,
    after_request_kib: f64,
    p99_alone_ms: Option<f64>,
    p99_with_idle_ms: Option<f64>,
    failed: usize,
}

/// Runs the benchmark and returns the Markdown report (also written to `out/conns.md`).
pub fn run(args: &ConnsArgs) -> Result<String> {
    std::fs::create_dir_all(&args.out)?;
    let out = args.out.canonicalize()?;
    let targets = args
        .targets
        .iter()
        .map(|t| target::resolve(&Target::parse(t)?, Path::new("."), &out.join("builds")))
        .collect::<Result<Vec<_>>>()?;
    let case = Case::new(CaseKind::NoPlugins, Some(1), None);
    let mut rows = Vec::new();
    for &mode in &args.modes {
        let mut driver = args.cpus.driver()?;
        if mode != Mode::Plain {
            driver.use_tls(&out)?;
        }
        let upstream = driver.start_upstream(2)?;
        let config = runner::write_config(&case, &upstream, &out.join("configs"))?;
        for t in &targets {
            let label = t.target.label();
            progress(format!("{mode}: {label}"));
            let dir = out.join(format!("{mode}-{}", runner::slug(&label)));
            let _ = std::fs::remove_dir_all(&dir);
            let running = driver.start_target(t, &case, &config, &dir)?;
            rows.push(measure(&mut driver, &running, mode, label, args, &out)?);
        }
    }
    let report = render(args, &rows);
    std::fs::write(out.join("conns.md"), &report)?;
    Ok(report)
}

fn measure(
    driver: &mut Local,
    running: &target::process::Running,
    mode: Mode,
    target: String,
    args: &ConnsArgs,
    out: &Path,
) -> Result<Row> {
    let spec = LoadSpec {
        base_url: String::new(),
        case: Case::new(CaseKind::NoPlugins, Some(1), None),
        connections: args.load_connections,
        threads: 1,
        duration: Duration::from_secs(args.load_secs),
        rate: None,
        cpus: None,
        work_dir: out.to_path_buf(),
        streams: 1,
        upstream: None,
    };
    let p99 = |driver: &mut Local| -> Result<Option<f64>> {
        if args.load_secs == 0 {
            return Ok(None);
        }
        Ok(Some(driver.run_load(running, &spec)?.latency.p99))
    };
    let p99_alone_ms = p99(driver)?;
    let rss = || {
        std::thread::sleep(SETTLE);
        procfs::tree_status_kib(running.pid(), "VmRSS").unwrap_or(0)
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?;
    let before = rss();
    let held = runtime
        .block_on(client::open(running.proxy, mode, args.conns))
        .context("opening the idle connections")?;
    let silent = rss();
    let (held, failed) = runtime.block_on(client::one_request_each(held));
    let after = rss();
    let p99_with_idle_ms = p99(driver)?;
    drop(held);
    let per_conn = |kib: u64| (kib as f64 - before as f64) / args.conns as f64;
    Ok(Row {
        mode,
        target,
        silent_kib: per_conn(silent),
        after_request_kib: per_conn(after),
        p99_alone_ms,
        p99_with_idle_ms,
        failed,
    })
}

fn render(args: &ConnsArgs, rows: &[Row]) -> String {
    let ms = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.2} ms"));
    let mut text = format!(
        "# sluice-perf conns\n\n{} idle connections per target, one worker on CPU {}; loaded p99 over {} wrk \
         connections for {} s (CPU {}).\n\n\
         | mode | target | connected, silent | after one request, kept alive | loaded p99 alone | loaded p99 with the idle connections | failed requests |\n\
         |---|---|---:|---:|---:|---:|---:|\n",
        args.conns, args.cpus.gateway_cpus, args.load_connections, args.load_secs, args.cpus.load_cpus
    );
    for r in rows {
        text.push_str(&format!(
            "| {} | {} | {:.2} KiB/conn | {:.2} KiB/conn | {} | {} | {} |\n",
            r.mode,
            r.target,
            r.silent_kib,
            r.after_request_kib,
            ms(r.p99_alone_ms),
            ms(r.p99_with_idle_ms),
            r.failed
        ));
    }
    text
}
