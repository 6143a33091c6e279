//! `sluice`: a Kong-compatible API gateway.
//!
//! This binary is the thin top of the stack: it reads node settings, sets up logging, and wires the pure crates
//! (model, router, plugins) and the runtime crates (store, proxy, admin) together. See `docs/architecture.md`.

use anyhow::Result;
use clap::{Parser, Subcommand, ValueEnum};
use std::path::PathBuf;
use std::process::ExitCode;

mod alloc;
mod check;
mod cluster_counters;
mod control;
mod db_import;
mod dbnode;
mod hybrid;
mod idle;
mod loader;
mod logging;
mod metrics;
mod migrate;
mod oauth2_store;
mod run;
mod settings;

/// The version reported by `sluice version`, `GET /` and the `Via` header.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
/// The Kong version whose Admin API and behaviour Sluice implements, reported as `GET /` `version`.
pub const KONG_VERSION: &str = "3.9.1";

#[derive(Parser)]
#[command(name = "sluice", version = VERSION, about = "A Kong-compatible API gateway", long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the gateway in the foreground.
    Start(StartArgs),
    /// Work with declarative config files.
    Config {
        #[command(subcommand)]
        command: ConfigCommand,
    },
    /// Prepare or upgrade the PostgreSQL schema (DB mode), as `kong migrations` does.
    Migrations {
        #[arg(value_enum)]
        action: migrate::Action,
        /// A conf file with Kong-style `name = value` settings (`pg_host`, ...).
        #[arg(short = 'c', long = "conf")]
        conf: Option<PathBuf>,
        /// Confirms `reset`.
        #[arg(long)]
        yes: bool,
        /// Seconds to wait for another node's migrations to finish.
        #[arg(long, default_value_t = 60)]
        lock_timeout: u64,
    },
    /// Print the version.
    Version,
}

#[derive(Subcommand)]
enum ConfigCommand {
    /// Validate a declarative config file; print every error, or a one-line summary when valid.
    Check {
        /// A Kong declarative config (YAML or JSON).
        file: PathBuf,
    },
    /// Validate a declarative config file and write it into the database (DB mode).
    #[command(name = "db_import")]
    DbImport {
        file: PathBuf,
        /// A conf file with Kong-style `name = value` settings (`pg_host`, ...).
        #[arg(short = 'c', long = "conf")]
        conf: Option<PathBuf>,
    },
}

/// Flags of `sluice start`; each one overrides the conf file and `SLUICE_*` variables.
#[derive(clap::Args)]
pub struct StartArgs {
    /// The declarative config to load (setting `declarative_config`). Without it, the last config committed to
    /// the store is served.
    #[arg(long)]
    config: Option<PathBuf>,
    /// A conf file with Kong-style `name = value` settings.
    #[arg(short = 'c', long = "conf")]
    conf: Option<PathBuf>,
    /// The prefix directory (setting `prefix`): the store and the generated files live under it.
    #[arg(short = 'p', long)]
    prefix: Option<PathBuf>,
    /// Log format on stderr.
    #[arg(long, value_enum, default_value_t = LogFormat::Text)]
    log_format: LogFormat,
}

/// How log lines are written.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

fn main() -> ExitCode {
    alloc::configure();
    let cli = Cli::parse();
    let result: Result<ExitCode> = match cli.command {
        Command::Version => {
            println!("sluice {VERSION}");
            Ok(ExitCode::SUCCESS)
        }
        Command::Config {
            command: ConfigCommand::Check { file },
        } => check::run(&file),
        Command::Config {
            command: ConfigCommand::DbImport { file, conf },
        } => db_import::run(&file, conf.as_deref()).map(|()| ExitCode::SUCCESS),
        Command::Migrations {
            action,
            conf,
            yes,
            lock_timeout,
        } => migrate::run(action, conf.as_deref(), yes, lock_timeout),
        Command::Start(args) => run::start(args).map(|()| ExitCode::SUCCESS),
    };
    result.unwrap_or_else(|e| {
        eprintln!("Error: {e:#}");
        ExitCode::FAILURE
    })
}
