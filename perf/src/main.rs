//! `sluice-perf`: Sluice's performance-testing framework.
//!
//! It starts a fast upstream, the targets under test (sluice binaries, git refs built on demand, nginx and
//! nginx-lua peers), drives load with wrk pinned to other CPUs, repeats runs interleaved (A, B, A, B, ...),
//! combines them, and writes JSON, Markdown and an SVG chart. `compare` applies Kong's release gates.

use anyhow::{bail, Result};
use clap::{Parser, Subcommand};
use std::path::PathBuf;

mod cases;
mod load;
mod report;
mod run;
mod stats;
mod target;
mod upstream;

#[derive(Parser)]
#[command(
    name = "sluice-perf",
    version,
    about = "Sluice's performance-testing framework"
)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Write the declarative config of a case (e.g. `rl-key-auth@100`, `large`).
    GenConfig {
        #[arg(long)]
        case: String,
        /// `host:port` of the upstream the config points at.
        #[arg(long, default_value = "127.0.0.1:9001")]
        upstream: String,
        /// Output file (stdout when absent); `.json` writes JSON, anything else YAML-compatible JSON.
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Serve a fixed response of `--body-size` bytes (the built-in upstream).
    Upstream {
        #[arg(long, default_value = "127.0.0.1:9001")]
        listen: std::net::SocketAddr,
        #[arg(long, default_value_t = 2)]
        body_size: usize,
    },
    /// Run cases × targets × connections, N interleaved repetitions, and write the combined report.
    Run(run::RunArgs),
    /// Run two targets on the same cases and apply Kong's release gates: exit 0 pass, 1 fail, 2 unstable.
    Compare {
        /// The baseline, e.g. `git:main` or `bin:/path/to/sluice`.
        a: String,
        /// The candidate, e.g. `git:HEAD`.
        b: String,
        #[command(flatten)]
        args: run::RunArgs,
    },
}

fn main() -> Result<()> {
    match Cli::parse().command {
        Cmd::GenConfig {
            case,
            upstream,
            out,
        } => {
            let case = cases::Case::parse(&case).map_err(anyhow::Error::msg)?;
            let text = serde_json::to_string_pretty(&case.config(&upstream))?;
            match out {
                Some(path) => std::fs::write(path, text)?,
                None => println!("{text}"),
            }
            Ok(())
        }
        Cmd::Upstream { listen, body_size } => upstream::serve(listen, body_size),
        Cmd::Run(args) => run::run(&args, None).map(|_| ()),
        Cmd::Compare { a, b, mut args } => {
            if !args.target.is_empty() {
                bail!("compare takes its two targets as arguments, not --target");
            }
            args.target = vec![a.clone(), b.clone()];
            let combined = run::run(&args, None)?;
            let verdict = run::verdict(&combined, &a, &b);
            std::process::exit(match verdict {
                stats::Verdict::Pass | stats::Verdict::Warn => 0,
                stats::Verdict::Fail => 1,
                stats::Verdict::Unstable => 2,
            });
        }
    }
}
