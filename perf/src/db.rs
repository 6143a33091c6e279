//! `sluice-perf db`: DB mode's figures (issue 18), each next to its goal. Two sluice nodes follow one
//! PostgreSQL database of the run's own; node A takes the Admin writes, node B is measured:
//! 1. propagation A → B on a fresh database: `--changes` `POST /services/perf/routes` on A, each followed
//!    by polling B's proxy for the new path until it stops answering 404 (goal p99 ≤ 1 s);
//! 2. node B's CPU (utime + stime from `/proc/<pid>/stat`) per single-entity change on the 10,000-route
//!    config (`gen-config --case no-plugins@10000`, loaded with `sluice config db_import`): `--cpu-changes`
//!    `PATCH /routes/rN` on A, one at a time (each waits until B routes it), no proxy load (goal ≤ 50 ms);
//! 3. B's RPS under wrk load while A makes one write every `--write-interval-ms`, against steady RPS in
//!    the same run (goal ≥ 0.97), and the failed or non-2xx requests during the writes (goal 0);
//! 4. the Admin write round trip on A during (3): p50 / p99.
//!
//! The databases are created with `psql` under unique names and dropped at the end, on errors too, and
//! on Ctrl-C (through [`crate::interrupt`]).

mod http;
mod pg;
mod report;

use crate::cases::{Case, CaseKind};
use crate::driver::{local::Local, Driver};
use crate::loadgen::LoadSpec;
use crate::procfs;
use crate::results::LoadResult;
use crate::target::process::{self, free_addr, Launch, Running};
use crate::target::{self, Target};
use crate::{progress, reload, runner};
use anyhow::{bail, ensure, Context, Result};
use report::{percentile, spread_ms, Row};
use serde_json::json;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How often B's proxy is polled for a new path.
const POLL: Duration = Duration::from_millis(1);
/// How long a change may take to reach B before the run fails.
const REACH_LIMIT: Duration = Duration::from_secs(10);
/// The idle window B's background CPU is read over before the per-change measurement.
const IDLE: Duration = Duration::from_secs(2);

/// Options of `sluice-perf db`.
#[derive(clap::Args, Debug, Clone)]
pub struct DbArgs {
    /// The sluice to measure: `bin:PATH` or `git:REF`.
    #[arg(long, default_value = "bin:target/release/sluice")]
    pub target: String,
    /// Writes timed for propagation A → B (fresh database).
    #[arg(long, default_value_t = 100)]
    pub changes: usize,
    /// `PATCH /routes/rN` whose CPU cost on node B is measured.
    #[arg(long, default_value_t = 50)]
    pub cpu_changes: usize,
    /// Routes of the config for the CPU and load measurements.
    #[arg(long, default_value_t = 10_000)]
    pub routes: usize,
    /// Seconds of load for the steady run and for the run with writes.
    #[arg(long, default_value_t = 20)]
    pub load_secs: u64,
    /// Seconds of load before the steady run (not measured).
    #[arg(long, default_value_t = 3)]
    pub warmup_secs: u64,
    /// Milliseconds between writes on node A during the loaded run.
    #[arg(long, default_value_t = 100)]
    pub write_interval_ms: u64,
    /// Load-generator connections.
    #[arg(long, default_value_t = 50)]
    pub connections: u32,
    /// CPUs for node B, the measured node (`taskset -c` list).
    #[arg(long, default_value = "0")]
    pub gateway_cpus: String,
    /// CPUs for the upstream and wrk.
    #[arg(long, default_value = "1")]
    pub load_cpus: String,
    /// CPUs for node A, the writing node, which stands for another host (default: the gateway CPUs,
    /// so that its work never slows the load generator; its CPU use is reported).
    #[arg(long)]
    pub writer_cpus: Option<String>,
    /// PostgreSQL host.
    #[arg(long, default_value = "127.0.0.1")]
    pub pg_host: String,
    /// PostgreSQL port.
    #[arg(long, default_value_t = 5432)]
    pub pg_port: u16,
    /// PostgreSQL user (must be allowed to create databases).
    #[arg(long, default_value = "postgres")]
    pub pg_user: String,
    /// Where configs, node logs and the report (`db.md`, `db.json`) go.
    #[arg(long, default_value = "target/sluice-perf/db")]
    pub out: PathBuf,
}

/// Runs the benchmark and returns the Markdown report (also written to `out/db.md`, figures to
/// `out/db.json`).
pub fn run(args: &DbArgs) -> Result<String> {
    ensure!(
        args.changes > 0 && args.cpu_changes > 0 && args.routes > 0,
        "--changes, --cpu-changes and --routes must be positive"
    );
    let mut args = args.clone();
    let writer_cpus = args
        .writer_cpus
        .get_or_insert_with(|| args.gateway_cpus.clone())
        .clone();
    procfs::parse_cpu_list(&writer_cpus)
        .with_context(|| format!("bad CPU list `{writer_cpus}`"))?;
    let args = &args;
    std::fs::create_dir_all(&args.out)?;
    let out = args.out.canonicalize()?;
    let resolved = target::resolve(
        &Target::parse(&args.target)?,
        Path::new("."),
        &out.join("builds"),
    )?;
    let bin = resolved.bin.context("db needs a sluice target")?;
    let server = pg::Server {
        host: args.pg_host.clone(),
        port: args.pg_port,
        user: args.pg_user.clone(),
    };
    let mut driver = Local::new(&args.gateway_cpus, &args.load_cpus)?;
    let upstream = driver.start_upstream(2)?;
    let mut notes = vec![format!(
        "sluice `{}`, PostgreSQL {}:{}; node B (measured) on CPUs {}, node A (writer) on {}, upstream and wrk on {}",
        args.target, args.pg_host, args.pg_port, args.gateway_cpus, writer_cpus, args.load_cpus
    )];
    let mut rows = Vec::new();

    progress("1/4 propagation A → B on a fresh database");
    {
        let db = pg::Database::create(&server, &pg::unique_name("prop"))?;
        db.sluice(&bin, &["migrations", "bootstrap"])?;
        let (a, b) = start_nodes(&mut driver, &bin, &db, &out.join("prop"), args)?;
        rows.extend(propagation(&a, &b, &upstream, args)?);
    }

    let case = Case::new(CaseKind::NoPlugins, Some(args.routes), None);
    let config = runner::write_config(&case, &upstream, &out.join("configs"))?;
    let db = pg::Database::create(&server, &pg::unique_name("big"))?;
    db.sluice(&bin, &["migrations", "bootstrap"])?;
    progress(format!("importing {case} with sluice config db_import"));
    let started = Instant::now();
    let path = config.to_string_lossy();
    db.sluice(&bin, &["config", "db_import", path.as_ref()])?;
    notes.push(format!(
        "{case}: `sluice config db_import` {:.1} s",
        started.elapsed().as_secs_f64()
    ));
    let started = Instant::now();
    let (a, b) = start_nodes(&mut driver, &bin, &db, &out.join("big"), args)?;
    notes.push(format!(
        "both nodes started on it (spawn → ready) in {:.1} s",
        started.elapsed().as_secs_f64()
    ));

    progress(format!(
        "2/4 node B's CPU over {} single-route changes",
        args.cpu_changes
    ));
    rows.extend(cpu_per_change(&a, &b, args)?);
    progress("3/4 and 4/4 proxy load on B, steady then with writes on A");
    rows.extend(load_with_writes(&mut driver, &a, &b, &case, &out, args)?);
    drop((a, b));
    drop(db);

    let table = report::table(&rows);
    let report = format!(
        "# sluice-perf db\n\n{}\n{table}",
        notes.iter().map(|l| format!("- {l}\n")).collect::<String>()
    );
    std::fs::write(out.join("db.md"), &report)?;
    std::fs::write(
        out.join("db.json"),
        serde_json::to_string_pretty(&json!({ "notes": notes, "figures": rows }))?,
    )?;
    progress(format!("report in {}", out.join("db.md").display()));
    Ok(report)
}

/// Starts node A (the writer) and node B (the measured one) on `db`, with their files under `dir`.
fn start_nodes(
    driver: &mut Local,
    bin: &Path,
    db: &pg::Database,
    dir: &Path,
    args: &DbArgs,
) -> Result<(Running, Running)> {
    let writer_cpus = args.writer_cpus.clone().unwrap_or_default();
    let writer_workers = procfs::parse_cpu_list(&writer_cpus).map_or(1, |s| s.len());
    let writer_prefix: Vec<String> = vec!["taskset".into(), "-c".into(), writer_cpus];
    let gateway_prefix = driver.gateway_prefix();
    let mut nodes = Vec::new();
    for (name, prefix, workers) in [
        ("node-a", &writer_prefix, writer_workers),
        ("node-b", &gateway_prefix, driver.workers()),
    ] {
        let dir = dir.join(name);
        let _ = std::fs::remove_dir_all(&dir);
        let launch = Launch {
            prefix,
            proxy: free_addr("127.0.0.1")?,
            upstream: "",
            workers,
            dir: &dir,
            tls: None,
        };
        nodes.push(process::start_sluice_with_env(
            bin,
            None,
            &launch,
            "info",
            &db.env(),
        )?);
    }
    let b = nodes.pop().context("node B")?;
    let a = nodes.pop().context("node A")?;
    driver.check_gateway_pinning(b.pid(), "node B");
    Ok((a, b))
}

fn admin(node: &Running) -> Result<SocketAddr> {
    node.admin.context("sluice has an admin address")
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// A node's CPU seconds (user + system, all threads).
fn cpu(node: &Running) -> Result<f64> {
    procfs::tree_cpu_seconds(node.pid()).context("reading a node's /proc/<pid>/stat")
}

/// CPU seconds of every PostgreSQL server process on this machine (`comm` = `postgres`): where the
/// database's share of the CPUs went (backends that ended meanwhile are not counted).
fn postgres_cpu() -> f64 {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0.0;
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/comm"))
                .is_ok_and(|c| c.trim() == "postgres")
        })
        .filter_map(procfs::cpu_seconds)
        .sum()
}

/// Waits until B's proxy routes `path`; the time since `since`.
fn reach_b(b: &Running, path: &str, since: Instant) -> Result<Duration> {
    http::until_routed(b.proxy, path, since, POLL, REACH_LIMIT)
        .map(|(_, t)| t)
        .with_context(|| {
            format!(
                "{path} never reached node B in {REACH_LIMIT:?}; log {}",
                b.log.display()
            )
        })
}

/// Sends one Admin write to A and checks its status.
fn write(a: &Running, method: &str, path: &str, body: serde_json::Value, want: u16) -> Result<f64> {
    let r = http::request(admin(a)?, method, path, Some(&body))?;
    if r.status != want {
        bail!(
            "{method} {path} answered {} (wanted {want}): {}",
            r.status,
            r.body.trim()
        );
    }
    Ok(r.wall_ms)
}

/// Figure 1: route creations on A until B routes each.
fn propagation(a: &Running, b: &Running, upstream: &str, args: &DbArgs) -> Result<Vec<Row>> {
    let service = json!({ "name": "perf", "url": format!("http://{upstream}") });
    write(a, "POST", "/services", service, 201)?;
    let (mut from_write, mut after_reply) = (Vec::new(), Vec::new());
    for i in 0..args.changes {
        let path = format!("/p{i}");
        let started = Instant::now();
        let route = json!({ "name": format!("p{i}"), "paths": [path] });
        let replied = write(a, "POST", "/services/perf/routes", route, 201)?;
        let t = ms(reach_b(b, &path, started)?);
        from_write.push(t);
        after_reply.push((t - replied).max(0.0));
    }
    let p99 = percentile(&from_write, 99.0);
    Ok(vec![
        Row::goal(
            &format!(
                "propagation A → B over {} writes (POST on A sent → B's proxy routes the path)",
                args.changes
            ),
            spread_ms(&from_write),
            p99,
            "p99 ≤ 1 s",
            p99 <= 1000.0,
        ),
        Row::info(
            "… counted from A's reply (A answers once it serves the write)",
            spread_ms(&after_reply),
            percentile(&after_reply, 99.0),
        ),
    ])
}

/// Figure 2: B's CPU per single-route change, the changes one at a time, no proxy load.
fn cpu_per_change(a: &Running, b: &Running, args: &DbArgs) -> Result<Vec<Row>> {
    let idle_start = cpu(b)?;
    std::thread::sleep(IDLE);
    let idle_rate = (cpu(b)? - idle_start) / IDLE.as_secs_f64();
    let n = args.cpu_changes;
    let mut reached = Vec::new();
    let before = cpu(b)?;
    let started = Instant::now();
    for k in 0..n {
        let i = k * args.routes / n;
        let extra = format!("/m{i}");
        let t0 = Instant::now();
        let body = json!({ "paths": [format!("/r{i}"), extra] });
        write(a, "PATCH", &format!("/routes/r{i}"), body, 200)?;
        reached.push(ms(reach_b(b, &extra, t0)?));
    }
    let spent = cpu(b)? - before;
    let elapsed = started.elapsed().as_secs_f64();
    let per_change = spent / n as f64 * 1e3;
    let corrected = (spent - idle_rate * elapsed).max(0.0) / n as f64 * 1e3;
    Ok(vec![
        Row::goal(
            &format!(
                "node B CPU per single-entity change, {} routes ({n} × PATCH /routes/rN on A, no proxy load)",
                args.routes
            ),
            format!("{per_change:.1} ms"),
            per_change,
            "≤ 50 ms",
            per_change <= 50.0,
        ),
        Row::info(
            "… less B's idle CPU over the same time",
            format!(
                "{corrected:.1} ms (idle {:.1} ms/s)",
                idle_rate * 1e3
            ),
            corrected,
        ),
        Row::info(
            "… B's split of its last apply (`configuration loaded` line)",
            reload::load_split(&b.log),
            0.0,
        ),
        Row::info(
            &format!(
                "propagation A → B of those {n} changes on the {} routes",
                args.routes
            ),
            spread_ms(&reached),
            percentile(&reached, 99.0),
        ),
    ])
}

/// Figures 3 and 4: steady RPS on B, then the same load while A writes every interval.
fn load_with_writes(
    driver: &mut Local,
    a: &Running,
    b: &Running,
    case: &Case,
    out: &Path,
    args: &DbArgs,
) -> Result<Vec<Row>> {
    let spec = LoadSpec {
        base_url: String::new(),
        case: *case,
        connections: args.connections,
        threads: 1,
        duration: Duration::from_secs(args.load_secs),
        rate: None,
        cpus: None,
        work_dir: out.to_path_buf(),
    };
    if args.warmup_secs > 0 {
        let warm = LoadSpec {
            duration: Duration::from_secs(args.warmup_secs),
            ..spec.clone()
        };
        driver.run_load(b, &warm)?;
    }
    let c0 = cpu(b)?;
    let steady = driver.run_load(b, &spec)?;
    let steady_cores = (cpu(b)? - c0) / steady.duration_s.max(1e-3);
    progress(format!(
        "steady: {:.0} RPS; now with a write every {} ms",
        steady.rps, args.write_interval_ms
    ));
    let (c0, a0, pg0) = (cpu(b)?, cpu(a)?, postgres_cpu());
    let (writing, walls) = load_while_writing(driver, a, b, &spec, args)?;
    let secs = writing.duration_s.max(1e-3);
    let writing_cores = (cpu(b)? - c0) / secs;
    let writer_cores = (cpu(a)? - a0) / secs;
    let pg_cores = (postgres_cpu() - pg0).max(0.0) / secs;
    let ratio = writing.rps / steady.rps.max(1.0);
    let failed = writing.errors + writing.non_2xx;
    let p99 = percentile(&walls, 99.0);
    Ok(vec![
        Row::info(
            &format!(
                "steady RPS on B ({case}, {} connections, {} s)",
                args.connections, args.load_secs
            ),
            format!(
                "{:.0} (p99 {:.1} ms, max {:.1} ms; {} errors, {} non-2xx)",
                steady.rps, steady.latency.p99, steady.latency.max, steady.errors, steady.non_2xx
            ),
            steady.rps,
        ),
        Row::goal(
            &format!(
                "RPS on B while A writes every {} ms ({} writes) ÷ steady",
                args.write_interval_ms,
                walls.len()
            ),
            format!(
                "{ratio:.3} ({:.0} RPS; p99 {:.1} ms, max {:.1} ms)",
                writing.rps, writing.latency.p99, writing.latency.max
            ),
            ratio,
            "≥ 0.97",
            ratio >= 0.97,
        ),
        Row::goal(
            "failed requests on B during the writes (socket errors + non-2xx)",
            format!(
                "{failed} ({} errors, {} non-2xx)",
                writing.errors, writing.non_2xx
            ),
            failed as f64,
            "0",
            failed == 0,
        ),
        Row::info(
            "node B CPU use, steady → during writes",
            format!("{steady_cores:.2} → {writing_cores:.2} cores"),
            writing_cores,
        ),
        Row::info(
            "CPU of node A and of PostgreSQL during the writes",
            format!(
                "A {writer_cores:.2} cores (CPUs {}), PostgreSQL {pg_cores:.2} cores (unpinned)",
                args.writer_cpus.as_deref().unwrap_or_default()
            ),
            writer_cores + pg_cores,
        ),
        Row::info(
            &format!(
                "Admin write round trip on A under proxy load ({} × PATCH /routes/rN)",
                walls.len()
            ),
            spread_ms(&walls),
            p99,
        ),
    ])
}

/// Runs the load on B while another thread sends a `PATCH /routes/rN` to A every interval (routes in
/// the middle of the range, which the load hits most, keeping their `/rN` path); the load's figures
/// and each write's round trip in ms.
fn load_while_writing(
    driver: &mut Local,
    a: &Running,
    b: &Running,
    spec: &LoadSpec,
    args: &DbArgs,
) -> Result<(LoadResult, Vec<f64>)> {
    let done = AtomicBool::new(false);
    let routes = args.routes;
    let (low, span) = (routes / 3, (routes / 3).max(1));
    std::thread::scope(|s| {
        let writer = s.spawn(|| -> Result<Vec<f64>> {
            let mut walls = Vec::new();
            let interval = Duration::from_millis(args.write_interval_ms);
            let mut next = Instant::now() + interval;
            let mut k = 0usize;
            while !done.load(Ordering::Relaxed) {
                let now = Instant::now();
                if now >= next {
                    let j = (low + k * 37 % span) % routes;
                    let body = json!({ "paths": [format!("/r{j}"), format!("/w{k}")] });
                    walls.push(write(a, "PATCH", &format!("/routes/r{j}"), body, 200)?);
                    k += 1;
                    next = (next + interval).max(Instant::now());
                } else {
                    std::thread::sleep((next - now).min(Duration::from_millis(10)));
                }
            }
            Ok(walls)
        });
        let result = driver.run_load(b, spec);
        done.store(true, Ordering::Relaxed);
        let walls = writer
            .join()
            .map_err(|_| anyhow::anyhow!("the writing thread panicked"))??;
        Ok((result?, walls))
    })
}
