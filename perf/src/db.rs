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
//! Node A and a local PostgreSQL server stand for other hosts: they run on the load CPUs (`--writer-cpus`,
//! `--pg-cpus`), not on node B's, so B's figures are B's own work; their CPU is reported.
//! On the load CPUs they compete with the load generator and the upstream, which keep those CPUs ~95%
//! busy. Measured on a 2-vCPU VM, A and PostgreSQL took ~0.1 of that CPU during the writes, the upstream
//! answered later, and B, waiting for it, went from 0.94 to 0.86–0.89 cores busy: its RPS fell ~10% for a
//! reason that is not B's (another host's database would not slow this host's clients). So they run at
//! the lowest priority (`--others-nice`, default 19): they get the CPU the load side leaves, B stays as
//! busy as in the steady runs, and the RPS ratio is B's own again. The writes then come a little later
//! than every interval; the report gives the rate they came at. (3) also gives B's requests per
//! CPU-second with writes ÷ steady: what the RPS ratio is when B's CPU is what limits it.
//!
//! The databases are created with `psql` under unique names and dropped at the end, on errors too, and
//! on Ctrl-C (through [`crate::interrupt`]).

pub(crate) mod http;
pub(crate) mod measure;
pub(crate) mod pg;
pub(crate) mod report;

use crate::cases::{Case, CaseKind};
use crate::driver::{local::Local, Driver};
use crate::pin::{Pinned, POSTGRES};
use crate::procfs;
use crate::target;
use crate::target::process::{self, free_addr, Launch, Running};
use crate::{progress, runner};
use anyhow::{ensure, Context, Result};
use measure::{cpu_per_change, load_with_writes, propagation};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::time::Instant;

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
    /// Seconds of load for each steady run and each run with writes.
    #[arg(long, default_value_t = 10)]
    pub load_secs: u64,
    /// Pairs of (steady, with writes) runs, taking turns; the ratio is their median.
    #[arg(long, default_value_t = 3)]
    pub reps: usize,
    /// Seconds of load before the steady run (not measured).
    #[arg(long, default_value_t = 3)]
    pub warmup_secs: u64,
    /// Milliseconds between writes on node A during the loaded run.
    #[arg(long, default_value_t = 100)]
    pub write_interval_ms: u64,
    /// Load-generator connections.
    #[arg(long, default_value_t = 50)]
    pub connections: u32,
    /// Where the gateway and the rest (upstream, load) run.
    #[command(flatten)]
    pub cpus: crate::runner::Cpus,
    /// CPUs for node A, the writing node, which stands for another host (default: the load CPUs, so
    /// that its work is not charged to node B's throughput; its CPU use is reported).
    #[arg(long)]
    pub writer_cpus: Option<String>,
    /// CPUs a PostgreSQL server on this machine is moved to for the run, as another host would be
    /// (default: the load CPUs; `off` leaves it where it is). Its CPU use is reported.
    #[arg(long)]
    pub pg_cpus: Option<String>,
    /// Nice value for node A and a local PostgreSQL server on the load CPUs (19: they take only the CPU
    /// the load generator and the upstream leave, as other hosts would; 0: the old method, where they
    /// took their share from the load side and B's RPS fell with it).
    #[arg(long, default_value_t = 19)]
    pub others_nice: i32,
    /// Steady runs without the decoy: by default a third node on a database of its own (the same config,
    /// where node A runs) takes the same writes during each steady run, so that both runs' load generator
    /// shares its CPUs with the same writer and database work and the RPS ratio measures node B alone.
    #[arg(long)]
    pub no_decoy: bool,
    /// The PostgreSQL server.
    #[command(flatten)]
    pub pg: pg::Server,
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
    let load_cpus = args.cpus.load_cpus.clone();
    let writer_cpus = args.writer_cpus.get_or_insert(load_cpus.clone()).clone();
    let pg_cpus = args.pg_cpus.get_or_insert(load_cpus).clone();
    let pinned_pg = Some(&pg_cpus).filter(|l| *l != "off");
    for list in std::iter::once(&writer_cpus).chain(pinned_pg) {
        procfs::parse_cpu_list(list).with_context(|| format!("bad CPU list `{list}`"))?;
    }
    let args = &args;
    let _pinned = match pinned_pg {
        Some(cpus) => Pinned::to(&POSTGRES, &args.pg.host, cpus, args.others_nice)?,
        None => None,
    };
    let (out, bin) = target::sluice_in(&args.out, &args.target, "db")?;
    let server = &args.pg;
    let mut driver = args.cpus.driver()?;
    let upstream = driver.start_upstream(2)?;
    let mut notes = vec![format!(
        "sluice `{}`, PostgreSQL {}:{} (on CPUs {pg_cpus}); node B (measured) on CPUs {}, node A (writer) on {}, upstream and wrk on {}; A and PostgreSQL at nice {}",
        args.target, args.pg.host, args.pg.port, args.cpus.gateway_cpus, writer_cpus, args.cpus.load_cpus, args.others_nice
    )];
    let mut rows = Vec::new();

    progress("1/4 propagation A → B on a fresh database");
    {
        let db = pg::Database::create(server, &pg::unique_name("prop"))?;
        db.sluice(&bin, &["migrations", "bootstrap"])?;
        let (a, b) = start_nodes(&mut driver, &bin, &db, &out.join("prop"), args)?;
        rows.extend(propagation(&a, &b, &upstream, args)?);
    }

    let case = Case::new(CaseKind::NoPlugins, Some(args.routes), None);
    let config = runner::write_config(&case, &upstream, &out.join("configs"))?;
    let (db, import_s) = imported(server, &bin, "big", &case, &config)?;
    notes.push(format!("{case}: `sluice config db_import` {import_s:.1} s"));
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
    let decoy = match args.no_decoy {
        true => None,
        false => {
            let (db, _) = imported(server, &bin, "decoy", &case, &config)?;
            progress("starting the decoy writer (its own database; node B does not follow it)");
            let node = start_node(&bin, &db, &writer_prefix(args), &out.join("decoy"), 1)?;
            notes.push("steady runs: the same writes on a decoy node with a database of its own, which node B does not follow (`--no-decoy`: no writes)".into());
            Some((node, db))
        }
    };
    progress("3/4 and 4/4 proxy load on B, steady then with writes on A");
    let decoy_node = decoy.as_ref().map(|(node, _)| node);
    rows.extend(load_with_writes(
        &mut driver,
        &a,
        &b,
        decoy_node,
        &case,
        &out,
        args,
    )?);
    drop(decoy);
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

/// A database of the run's own on `server` (its name ending in `suffix`), bootstrapped, with `config`
/// (the config of `case`) imported by `sluice config db_import`; and the seconds the import took.
/// Shared with `sluice-perf cluster --cp-database postgres`, whose control plane runs on it.
pub(crate) fn imported(
    server: &pg::Server,
    bin: &Path,
    suffix: &str,
    case: &Case,
    config: &Path,
) -> Result<(pg::Database, f64)> {
    let db = pg::Database::create(server, &pg::unique_name(suffix))?;
    db.sluice(bin, &["migrations", "bootstrap"])?;
    progress(format!("importing {case} with sluice config db_import"));
    let started = Instant::now();
    let path = config.to_string_lossy();
    db.sluice(bin, &["config", "db_import", path.as_ref()])?;
    Ok((db, started.elapsed().as_secs_f64()))
}

/// Starts node A (the writer) and node B (the measured one) on `db`, with their files under `dir`.
fn start_nodes(
    driver: &mut Local,
    bin: &Path,
    db: &pg::Database,
    dir: &Path,
    args: &DbArgs,
) -> Result<(Running, Running)> {
    let writer_workers = args
        .writer_cpus
        .as_deref()
        .and_then(procfs::parse_cpu_list)
        .map_or(1, |s| s.len());
    let a = start_node(
        bin,
        db,
        &writer_prefix(args),
        &dir.join("node-a"),
        writer_workers,
    )?;
    let b = start_node(
        bin,
        db,
        &driver.gateway_prefix(),
        &dir.join("node-b"),
        driver.workers(),
    )?;
    driver.check_gateway_pinning(b.pid(), "node B");
    Ok((a, b))
}

/// What a writer node runs under: `--others-nice` on `--writer-cpus`.
fn writer_prefix(args: &DbArgs) -> Vec<String> {
    let writer_cpus = args.writer_cpus.clone().unwrap_or_default();
    let nice = args.others_nice.to_string();
    ["nice", "-n", &nice, "taskset", "-c", &writer_cpus]
        .map(String::from)
        .into()
}

/// One node on `db` under `prefix`, with `workers` proxy workers and its files in `dir` (emptied first).
fn start_node(
    bin: &Path,
    db: &pg::Database,
    prefix: &[String],
    dir: &Path,
    workers: usize,
) -> Result<Running> {
    let _ = std::fs::remove_dir_all(dir);
    let launch = Launch {
        prefix,
        proxy: free_addr("127.0.0.1")?,
        upstream: "",
        workers,
        dir,
        tls: None,
    };
    process::start_sluice_with_env(bin, None, &launch, "info", &db.env())
}
