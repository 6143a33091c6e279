//! `sluice-perf cluster`: hybrid mode's delta figures (issue 19, point 4), each next to its goal. A control
//! plane serves the 10,000-route config (`--case`, default `no-plugins@10000`, as `sluice-perf db`
//! uses), DB-less or from a PostgreSQL database of the run's own (`--cp-database`, [`cp`]); a data plane
//! connects to it
//! through a counting TCP relay, so the bytes are the wire's (TLS records, WebSocket frames, gzip):
//! 1. full sync to a fresh DP: DP spawn → its `/status/ready` answers 200 (it serves the CP's config),
//!    with the bytes that took, and the DP's own load time from its log (goal ≤ 1 s);
//! 2. `--changes` one-route changes: route i gets a second path, either in the document, which is
//!    posted whole to the CP (DB-less), or with one `PATCH /routes/rN` (PostgreSQL); from the reply
//!    (the CP has committed it) until the DP routes the new path: p50 / p99 (goal p99 ≤ 1 s); bytes
//!    CP → DP per change (goal ≤ 10 KB); CPU per change of the DP and of the CP (DB-less, the CP's
//!    includes validating the posted 10,000-route document, which a DB-mode CP does not do) and of
//!    PostgreSQL;
//! 3. the DP's proxy RPS (`--load-secs`, `--connections`) steady, then while a change comes every
//!    100 ms, with failed requests, in `--reps` interleaved pairs: the median pair's ratio (goal ≥ 0.97
//!    of steady);
//! 4. the same number of changes again with 3 DPs ([`changes`]): the CP's CPU per change with 1 and 3
//!    DPs gives its fixed cost and its cost per DP, projected to 100 DPs.
//!
//! The CP stands for another host: it runs on the load CPUs, the DPs on the gateway CPUs. As it then
//! competes with the load generator, (3) also gives the DP's requests per CPU-second with changes ÷
//! steady: the RPS ratio when the DP's CPU is what limits it.
//!
//! Every entity of the generated document is stamped with fixed `created_at`/`updated_at`: a DB-less load
//! stamps entities without them with the load time, so each re-post would change every entity (and the
//! CP would send the whole config, which a delta cannot be smaller than). A database CP imports the same
//! document, and its local PostgreSQL server moves to the load CPUs with it (at the CP's nice value
//! while the DP's RPS is measured).

use crate::cases::{config, Case};
use crate::db::measure::medians;
use crate::db::report::{percentile, spread_ms};
use crate::driver::Driver;
use crate::loadgen::LoadSpec;
use crate::procfs;
use crate::progress;
use crate::target;
use crate::target::process::{self, free_addr, Launch, Running};
use anyhow::{ensure, Context, Result};
use cp::{CpDatabase, Store};
use serde_json::Value;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

mod changes;
mod cp;

/// Options of `sluice-perf cluster`.
#[derive(clap::Args, Debug, Clone)]
pub struct ClusterArgs {
    /// The sluice to measure: `bin:PATH` or `git:REF`.
    #[arg(long, default_value = "bin:target/release/sluice")]
    pub target: String,
    /// The config: a case name or `name@routes` (`large`: key-auth and request-termination on every
    /// route and 10,000 consumers).
    #[arg(long, default_value = "no-plugins@10000")]
    pub case: String,
    /// One-route changes timed.
    #[arg(long, default_value_t = 100)]
    pub changes: usize,
    /// Seconds of proxy load on the DP, steady and then while a change comes every 100 ms.
    #[arg(long, default_value_t = 10)]
    pub load_secs: u64,
    /// Where the control plane keeps its config: `off` (DB-less) or `postgres` (a database of the run's
    /// own on `--pg-host`, dropped at the end).
    #[arg(long, value_enum, default_value_t = CpDatabase::Off)]
    pub cp_database: CpDatabase,
    /// The PostgreSQL server of `--cp-database postgres`.
    #[command(flatten)]
    pub pg: crate::db::pg::Server,
    /// Load-generator connections.
    #[arg(long, default_value_t = 50)]
    pub connections: u32,
    /// Pairs of steady and changing load runs, interleaved; (3) reports the median pair's ratio.
    #[arg(long, default_value_t = 3)]
    pub reps: usize,
    /// Where the gateway and the rest (upstream, load) run.
    #[command(flatten)]
    pub cpus: crate::runner::Cpus,
    /// Nice value of the CP while the DP's RPS is measured (19: it takes only the CPU the load generator
    /// and the upstream leave, as another host would; 0: it takes its share of the load CPUs, and the
    /// DP's RPS falls with the load side's; see `sluice-perf db`'s docs).
    #[arg(long, default_value_t = 19)]
    pub cp_nice: i32,
    /// Steady halves without the decoy: by default a second CP (its own store, the same nice) takes the
    /// same writes during each steady half, so that both halves' load generator shares its CPUs with the
    /// same CP and database work and the RPS ratio measures the DP alone. Each CP is then followed by a
    /// mirror DP on the load CPUs at the CPs' nice: a CP's push work (export, diff, rehash, gzip per
    /// change) is done only for a connected DP, so a decoy no DP followed took ~2-4% of the load CPU where
    /// the real CP took 10-20%, and the load generator lost that CPU in the changing halves alone.
    #[arg(long)]
    pub no_decoy: bool,
    /// Where configs, node logs and the report (`cluster.md`) go.
    #[arg(long, default_value = "target/sluice-perf/cluster")]
    pub out: PathBuf,
}

/// Runs the measurement and returns the Markdown report (also written to `out/cluster.md`).
pub fn run(args: &ClusterArgs) -> Result<String> {
    let (out, bin) = target::sluice_in(&args.out, &args.target, "cluster")?;
    let mut driver = args.cpus.driver()?;
    let upstream = driver.start_upstream(2)?;
    let case = Case::parse(&args.case)?;
    let mut doc = config::build(&case, &upstream);
    stamp(&mut doc);
    let config_path = out.join("cluster-config.json");
    std::fs::write(&config_path, doc.to_string())?;
    let load_cpus = &args.cpus.load_cpus;
    let decoy_doc = (!args.no_decoy).then(|| doc.clone());
    let new_store = |doc| {
        Store::new(
            args.cp_database,
            doc,
            &case,
            &config_path,
            &bin,
            &args.pg,
            load_cpus,
        )
    };
    // Declared before the nodes, so dropped after them: the database outlives its CP.
    let mut store = new_store(doc)?;
    let (cert, key) = cluster_cert(&out)?;
    let cluster = free_addr("127.0.0.1")?;
    let common = |role: &str| {
        vec![
            ("SLUICE_ROLE".to_string(), role.to_string()),
            ("SLUICE_CLUSTER_CERT".into(), cert.clone()),
            ("SLUICE_CLUSTER_CERT_KEY".into(), key.clone()),
        ]
    };
    let prefix = driver.gateway_prefix();
    let (cp_dir, dp_dir) = (out.join("cp"), out.join("dp"));

    // A CP stands for another host: on the load CPUs, so that validating each posted document is not
    // charged to the DP's throughput (its CPU per change is reported). Its node and admin address.
    let load_prefix = ["taskset", "-c", load_cpus].map(String::from);
    let start_cp = |store: &Store,
                    dir: &Path,
                    listen: SocketAddr|
     -> Result<(Running, SocketAddr)> {
        let mut env = common("control_plane");
        env.push(("SLUICE_CLUSTER_LISTEN".into(), listen.to_string()));
        env.extend(store.env.iter().cloned());
        let launched = launch(&load_prefix, &upstream, dir)?;
        let cp =
            process::start_sluice_with_env(&bin, store.config.as_deref(), &launched, "info", &env)?;
        let admin = cp.admin.context("a control plane has an admin address")?;
        Ok((cp, admin))
    };

    progress(format!("starting the control plane with {case}"));
    let (cp, admin) = start_cp(&store, &cp_dir, cluster)?;

    let relay = Relay::start(cluster)?;
    // A fresh DP joins a CP that has been serving its config for a moment (a CP makes the whole frame
    // once its config has been quiet for 500 ms).
    std::thread::sleep(Duration::from_secs(1));
    progress("starting a fresh data plane");
    let mut dp_env = common("data_plane");
    dp_env.push((
        "SLUICE_CLUSTER_CONTROL_PLANE".into(),
        relay.addr.to_string(),
    ));
    let start_dp = |dir: &Path| -> Result<_> {
        let dp_launch = launch(&prefix, &upstream, dir)?;
        process::start_sluice_with_env(&bin, None, &dp_launch, "info", &dp_env)
    };
    let spawned = Instant::now();
    let dp = start_dp(&dp_dir)?;
    let full_sync = spawned.elapsed();
    let full_bytes = relay.to_dp.load(Ordering::Relaxed);
    let dp_load_ms = last_load_ms(&dp.log);

    progress(format!("{} one-route changes, 1 data plane", args.changes));
    let one = changes::stream(
        &mut store.writes,
        admin,
        cp.pid(),
        &[&dp],
        &relay,
        0..args.changes,
    )?;
    let deltas = count_lines(&dp.log, "delta from the control plane applied");
    let fulls = count_lines(&dp.log, "configuration from the control plane applied");
    progress(format!(
        "the DP's proxy RPS, steady and with a change every 100 ms ({} s each)",
        args.load_secs
    ));
    let spec = LoadSpec {
        base_url: String::new(),
        case,
        connections: args.connections,
        threads: 1,
        duration: Duration::from_secs(args.load_secs),
        rate: None,
        cpus: None,
        work_dir: out.clone(),
        streams: 1,
        upstream: None,
    };
    let first = 2 * args.changes;
    // Declared after `store`, so dropped before it (each puts PostgreSQL's CPUs back as it found them).
    let mut decoy = match decoy_doc {
        Some(doc) => {
            progress(
                "starting the decoy control plane (its own store) and a mirror DP for each CP",
            );
            let decoy_store = new_store(doc)?;
            let decoy_cluster = free_addr("127.0.0.1")?;
            let (node, admin) = start_cp(&decoy_store, &out.join("decoy"), decoy_cluster)?;
            let mirror = |dir: &str, cp: SocketAddr| -> Result<Running> {
                let mut env = common("data_plane");
                env.push(("SLUICE_CLUSTER_CONTROL_PLANE".into(), cp.to_string()));
                let dir = out.join(dir);
                let launched = launch(&load_prefix, &upstream, &dir)?;
                process::start_sluice_with_env(&bin, None, &launched, "info", &env)
            };
            let mirrors = [
                mirror("mirror-cp", cluster)?,
                mirror("mirror-decoy", decoy_cluster)?,
            ];
            Some((decoy_store, node, admin, mirrors))
        }
        None => None,
    };
    type Decoy = Option<(Store, Running, SocketAddr, [Running; 2])>;
    let renice_cps = |store: &mut Store, decoy: &mut Decoy, nice| {
        crate::pin::set_nice_all(cp.pid(), nice);
        store.renice(nice);
        if let Some((decoy_store, node, _, mirrors)) = decoy {
            crate::pin::set_nice_all(node.pid(), nice);
            decoy_store.renice(nice);
            for m in mirrors.iter() {
                crate::pin::set_nice_all(m.pid(), nice);
            }
        }
    };
    renice_cps(&mut store, &mut decoy, args.cp_nice);
    let loaded = changes::load_while_changing(
        &mut driver,
        &dp,
        &spec,
        (&mut store.writes, admin),
        decoy
            .as_mut()
            .map(|(s, _, admin, _)| (&mut s.writes, *admin)),
        first,
        args.reps,
    );
    renice_cps(&mut store, &mut decoy, 0);
    drop(decoy);
    let loaded = loaded?;
    let (ratios, per_cpu) = (loaded.ratios(), loaded.per_cpu);
    let ratio = percentile(&ratios, 50.0);
    let (steady, changing) = (medians(&loaded.steady), medians(&loaded.changing));
    progress(format!("{} one-route changes, 3 data planes", args.changes));
    let more = [start_dp(&out.join("dp2"))?, start_dp(&out.join("dp3"))?];
    let three = changes::stream(
        &mut store.writes,
        admin,
        cp.pid(),
        &[&dp, &more[0], &more[1]],
        &relay,
        args.changes..2 * args.changes,
    )?;
    let projected = changes::projection(&one, &three, 100.0);
    let (latencies, bytes) = (&one.latencies, &one.bytes);

    let lines = [
        format!("config: {case} (every entity stamped), sluice `{}`, DPs on CPUs {}, the CP, upstream and load on {}", args.target, args.cpus.gateway_cpus, args.cpus.load_cpus),
        format!("the CP's store: {}", store.note),
        format!(
            "full sync to a fresh DP (spawn → ready with the CP's config): {:.0} ms, {} KB on the wire; the DP's load {} — goal ≤ 1 s",
            full_sync.as_secs_f64() * 1e3,
            full_bytes / 1024,
            dp_load_ms.map_or("?".into(), |ms| format!("{ms:.0} ms"))
        ),
        format!(
            "one-route change, CP commit → DP routes it, over {} changes: {} — goal p99 ≤ 1 s",
            latencies.len(),
            spread_ms(latencies)
        ),
        format!(
            "bytes CP → DP per change (TLS records, with the pong to the DP's ping): median {:.0}, max {:.0} — goal ≤ 10 KB",
            percentile(bytes, 50.0),
            bytes.iter().cloned().fold(0.0, f64::max)
        ),
        format!("the DP applied {deltas} deltas and {fulls} whole configs (1: the first sync)"),
        format!(
            "DP proxy RPS with a change every 100 ms ÷ steady, median of {} interleaved pairs: {ratio:.3} (each {}; medians {:.0} / {:.0} RPS; {} changes, one per {:.0} ms as they came, the CP at nice {}; {}; failed requests: {} errors, {} non-2xx; steady: {} errors, {} non-2xx) — goal ≥ 0.97",
            ratios.len(),
            ratios.iter().map(|r| format!("{r:.3}")).collect::<Vec<_>>().join(", "),
            changing.rps,
            steady.rps,
            loaded.posted,
            changing.duration_s * 1e3 / loaded.posted.max(1) as f64,
            args.cp_nice,
            if args.no_decoy {
                "the steady halves without CP writes"
            } else {
                "the steady halves with the same writes to a decoy CP, each CP followed by a mirror DP on the load CPUs at the CP's nice"
            },
            changing.errors,
            changing.non_2xx,
            steady.errors,
            steady.non_2xx,
        ),
        format!("the DP's requests per CPU-second with a change every 100 ms ÷ steady (the RPS ratio when the DP's CPU is what limits it): {per_cpu:.3}"),
        cpu_line(&one, &three, store.has_database()),
        format!(
            "CP CPU per change: {projected}; with 3 DPs, commit → every DP routes it: {}",
            spread_ms(&three.latencies)
        ),
    ];
    let report = format!(
        "# sluice-perf cluster\n\n{}\n",
        lines.iter().map(|l| format!("- {l}\n")).collect::<String>()
    );
    std::fs::write(out.join("cluster.md"), &report)?;
    Ok(report)
}

/// The CPU per change of the DP, the CP and (with a database) PostgreSQL, for the report.
fn cpu_line(one: &changes::Streamed, three: &changes::Streamed, database: bool) -> String {
    let (dp, cp1, cp3) = (one.dp_ms, one.cp_ms, three.cp_ms);
    let tail = if database {
        format!(
            "; PostgreSQL {:.1} ms with 1 DP, {:.1} ms with 3 (all its processes on the machine)",
            one.pg_ms, three.pg_ms
        )
    } else {
        " (with validating the posted document)".into()
    };
    format!(
        "CPU per change: DP {dp:.1} ms, of which {:.1} ms off its proxy workers (the apply and the hash check; the workers served this tool's {:.1} probes per change, which time it); CP {cp1:.1} ms with 1 DP, {cp3:.1} ms with 3{tail}",
        one.dp_off_workers_ms, one.probes_per_change
    )
}

/// One node of one worker, in `dir` (emptied first).
fn launch<'a>(prefix: &'a [String], upstream: &'a str, dir: &'a Path) -> Result<Launch<'a>> {
    let _ = std::fs::remove_dir_all(dir);
    Ok(Launch {
        prefix,
        proxy: free_addr("127.0.0.1")?,
        upstream,
        workers: 1,
        dir,
        tls: None,
    })
}

/// Gives every entity of the document fixed timestamps (see the module docs).
fn stamp(v: &mut Value) {
    const ENTITIES: [&str; 6] = [
        "services",
        "routes",
        "plugins",
        "consumers",
        "keyauth_credentials",
        "basicauth_credentials",
    ];
    if let Value::Object(map) = v {
        for (key, child) in map.iter_mut() {
            if let (true, Value::Array(items)) = (ENTITIES.contains(&key.as_str()), &mut *child) {
                for item in items.iter_mut().filter(|i| i.is_object()) {
                    item["created_at"] = 1_700_000_000.into();
                    item["updated_at"] = 1_700_000_000.into();
                    stamp(item);
                }
            }
        }
    }
}

/// A self-signed cluster certificate made with `openssl` (shared mode); its cert and key paths.
fn cluster_cert(dir: &Path) -> Result<(String, String)> {
    let (cert, key) = (dir.join("cluster.crt"), dir.join("cluster.key"));
    let status = std::process::Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-nodes",
        ])
        .args(["-subj", "/CN=kong_clustering", "-days", "2", "-keyout"])
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .stderr(std::process::Stdio::null())
        .status()
        .context("running openssl")?;
    ensure!(
        status.success(),
        "openssl could not make the cluster certificate"
    );
    Ok((cert.display().to_string(), key.display().to_string()))
}

fn cpu(pid: u32) -> f64 {
    procfs::cpu_seconds(pid).unwrap_or(0.0)
}

fn count_lines(log: &Path, needle: &str) -> usize {
    std::fs::read_to_string(log).map_or(0, |t| t.matches(needle).count())
}

/// `total_ms` of the last `configuration loaded` line of a node's log.
fn last_load_ms(log: &Path) -> Option<f64> {
    let text = std::fs::read_to_string(log).ok()?;
    let line = text
        .lines()
        .rev()
        .find(|l| l.contains("configuration loaded"))?;
    crate::reload::strip_ansi(line)
        .split("total_ms=")
        .nth(1)?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// A TCP relay in front of the CP that counts the bytes it passes to the DP.
struct Relay {
    addr: SocketAddr,
    to_dp: Arc<AtomicU64>,
}

impl Relay {
    fn start(cp: SocketAddr) -> Result<Relay> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        let to_dp = Arc::new(AtomicU64::new(0));
        let counter = to_dp.clone();
        std::thread::spawn(move || {
            for dp in listener.incoming().map_while(Result::ok) {
                let Ok(upstream) = TcpStream::connect(cp) else {
                    continue;
                };
                let (_, _) = (dp.set_nodelay(true), upstream.set_nodelay(true));
                let (Ok(dp2), Ok(up2)) = (dp.try_clone(), upstream.try_clone()) else {
                    continue;
                };
                let counter = counter.clone();
                std::thread::spawn(move || copy(up2, dp2, Some(&counter)));
                std::thread::spawn(move || copy(dp, upstream, None));
            }
        });
        Ok(Relay { addr, to_dp })
    }
}

fn copy(mut from: TcpStream, mut to: TcpStream, count: Option<&AtomicU64>) {
    let mut buf = vec![0u8; 64 * 1024];
    while let Ok(n) = from.read(&mut buf) {
        if n == 0 || to.write_all(&buf[..n]).is_err() {
            break;
        }
        if let Some(c) = count {
            c.fetch_add(n as u64, Ordering::Relaxed);
        }
    }
    let _ = to.shutdown(std::net::Shutdown::Both);
}
