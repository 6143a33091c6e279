//! `sluice-perf`: the command-line front of Sluice's performance-testing framework (see the
//! library docs and `docs/perf.md`).

use anyhow::{bail, Result};
use clap::{Parser, Subcommand};
use sluice_perf::cases::{config, Case, CaseKind};
use sluice_perf::target::Target;
use sluice_perf::{
    cluster, compare, conns, db, flamegraph, reload, report, runner, soak, upstream,
};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "sluice-perf",
    version,
    about = "Sluice's performance-testing framework",
    long_about = "Generates Kong configs for benchmark cases, runs sluice builds and nginx peers under wrk \
                  with CPU pinning and interleaved repetitions, applies Kong's release gates, and draws \
                  reports and flame graphs. Progress goes to stderr; see docs/perf.md."
)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Print (or write) the Kong declarative config of a case: route i has path /r{i}, consumer
    /// c{i} has key key-{i} or password pw-{i}.
    GenConfig {
        /// Case name: no-plugins, rate-limiting, rl-key-auth, rl-basic-auth, rl-jwt, large, ws-echo,
        /// grpc-unary, ... (`name@routes[/consumers]` also works).
        #[arg(long)]
        case: String,
        /// Number of routes (overrides the case's).
        #[arg(long)]
        routes: Option<usize>,
        /// Number of consumers (authenticated cases; defaults to the number of routes).
        #[arg(long)]
        consumers: Option<usize>,
        /// `host:port` of the upstream the service points at.
        #[arg(long, default_value = "127.0.0.1:9001")]
        upstream: String,
        /// Output format (JSON suits the ~5 MB `large` config).
        #[arg(long, value_enum, default_value_t = config::Format::Yaml)]
        format: config::Format,
        /// Output file (stdout when absent).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Serve a fixed response of --body-size bytes with keep-alive on one thread (the upstream
    /// `run` uses).
    Upstream {
        /// Address to listen on.
        #[arg(long, default_value = "127.0.0.1:9001")]
        listen: std::net::SocketAddr,
        /// Response body size in bytes.
        #[arg(long, default_value_t = 2)]
        body_size: usize,
    },
    /// The ws-echo case's load driver (`run` starts it on the load CPUs): WebSocket tunnels through a
    /// gateway, one message in flight each; prints one JSON result line.
    WsLoad(sluice_perf::loadgen::ws::WsLoadArgs),
    /// Run cases × targets × connections with N interleaved repetitions; write results.json,
    /// results.md and chart.svg.
    Run(runner::RunArgs),
    /// Run baseline A and candidate B interleaved and apply Kong's release gates (RPS −5% warn /
    /// −10% fail, p95 +5%/+15%, p99 +5%/+20%, CV > 15% unstable). Exit 0 pass, 1 fail, 2 unstable.
    Compare {
        /// Baseline target, e.g. `git:main`.
        a: String,
        /// Candidate target, e.g. `git:HEAD` or `bin:target/release/sluice`.
        b: String,
        #[command(flatten)]
        args: runner::RunArgs,
    },
    /// Profile a target under load with `perf record` and write a flame graph SVG.
    Flamegraph(flamegraph::FlameArgs),
    /// The large-config benchmark: POST /config latency, RPS while re-posting under load, RSS
    /// across reloads, cold start from the store — each next to its goal.
    Reload(reload::ReloadArgs),
    /// The hardening soak: minutes of load with the config re-posted every few seconds and a crowd of
    /// slowloris, stalled-body and silent clients beside it; failed requests, RSS and fds over time.
    Soak(soak::SoakArgs),
    /// DB mode (PostgreSQL): propagation between two nodes, a node's CPU per change on 10,000
    /// routes, RPS and failed requests while another node writes, write latency under load — each
    /// next to its goal, on a database of its own that is dropped at the end.
    Db(db::DbArgs),
    /// Hybrid mode: a full sync of the 10,000-route config to a fresh data plane, and per one-route
    /// change the bytes on the wire to the data plane and the time until it routes the change — each
    /// next to its goal.
    Cluster(cluster::ClusterArgs),
    /// Memory per idle connection (plain, TLS, h2) for each target, and the loaded p99 with and
    /// without the idle connections held.
    Conns(conns::ConnsArgs),
    /// Re-render results.md and chart.svg from a results directory's results.json.
    Report {
        /// A results directory (or a results.json file).
        dir: PathBuf,
    },
}

fn main() -> ExitCode {
    match real_main() {
        Ok(code) => code,
        // Failures caused by the teardown of an interrupted run: the signal thread exits with 130.
        Err(_) if sluice_perf::interrupt::interrupted() => loop {
            std::thread::sleep(std::time::Duration::from_secs(1));
        },
        Err(e) => {
            eprintln!("sluice-perf: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn real_main() -> Result<ExitCode> {
    sluice_perf::interrupt::install();
    match Cli::parse().command {
        Cmd::GenConfig {
            case,
            routes,
            consumers,
            upstream,
            format,
            out,
        } => {
            let parsed = Case::parse(&case)?;
            let case = if routes.is_some() || consumers.is_some() {
                let kind: CaseKind = parsed.kind;
                Case::new(kind, routes.or(Some(parsed.routes)), consumers)
            } else {
                parsed
            };
            let text = config::render(&config::build(&case, &upstream), format)?;
            match out {
                Some(path) => {
                    std::fs::write(&path, text)?;
                    sluice_perf::progress(format!("wrote {case} to {}", path.display()));
                }
                None => print!("{text}"),
            }
        }
        Cmd::Upstream { listen, body_size } => upstream::serve(listen, body_size)?,
        Cmd::WsLoad(args) => sluice_perf::loadgen::ws::main(&args)?,
        Cmd::Run(args) => {
            let (results, dir) = runner::run(&args)?;
            println!("{}", report::markdown(&results));
            sluice_perf::progress(format!("results in {}", dir.display()));
        }
        Cmd::Compare { a, b, mut args } => {
            if !args.target.is_empty() {
                bail!("compare takes its two targets as arguments, not --target");
            }
            args.target = vec![a.clone(), b.clone()];
            let targets = [Target::parse(&a)?, Target::parse(&b)?];
            let [la, lb]: [String; 2] = runner::labels(targets.iter())
                .try_into()
                .map_err(|_| anyhow::anyhow!("labels"))?;
            let (results, dir) = runner::run(&args)?;
            let rows = compare::judge(&results.combined, &la, &lb);
            let table = compare::table(&rows, &la, &lb);
            std::fs::write(dir.join("compare.md"), &table)?;
            println!("{table}");
            return Ok(ExitCode::from(compare::overall(&rows).exit_code()));
        }
        Cmd::Flamegraph(args) => flamegraph::run(&args)?,
        Cmd::Reload(args) => println!("{}", reload::run(&args)?),
        Cmd::Soak(args) => println!("{}", soak::run(&args)?),
        Cmd::Db(args) => println!("{}", db::run(&args)?),
        Cmd::Cluster(args) => println!("{}", cluster::run(&args)?),
        Cmd::Conns(args) => println!("{}", conns::run(&args)?),
        Cmd::Report { dir } => {
            let results = report::rerender(&dir)?;
            println!("{}", report::markdown(&results));
        }
    }
    Ok(ExitCode::SUCCESS)
}
