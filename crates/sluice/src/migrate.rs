//! `sluice migrations bootstrap | up | finish | list | status | reset --yes`: Kong's commands over
//! [`sluice_db::migrations`], against the database the node settings name.

use crate::settings::Settings;
use anyhow::{bail, Result};
use sluice_db::migrations::{self, State};
use sluice_db::PgSettings;
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;
use tokio_postgres::Client;

/// Which migrations command.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum Action {
    /// Create the schema on an empty database.
    Bootstrap,
    /// Run the new migrations' additive part.
    Up,
    /// Run the pending teardowns.
    Finish,
    /// List every migration and its state.
    List,
    /// One line and Kong's exit code: 0 up to date, 3 not bootstrapped, 4 pending, 5 new.
    Status,
    /// Drop every table Sluice made (needs --yes).
    Reset,
}

/// Runs `f` on one connection to the database the node settings (`conf`, `SLUICE_PG_*`) name, on a
/// runtime of its own: the commands that work on the database directly (`migrations`, `db_import`).
pub fn on_database<T>(
    conf: Option<&Path>,
    f: impl AsyncFnOnce(&mut Client, &PgSettings) -> Result<T>,
) -> Result<T> {
    let settings = Settings::load(conf, &[("database", "postgres".into())])?;
    let Some(pg) = settings.pg else {
        bail!("database: this command needs database = postgres");
    };
    if let Err(e) = pg.check() {
        bail!("{e}");
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let mut client = sluice_db::settings::connect_one(&pg, |_| {})
            .await
            .map_err(|e| anyhow::anyhow!("database {}: {e}", pg.describe()))?;
        f(&mut client, &pg).await
    })
}

pub fn run(action: Action, conf: Option<&Path>, yes: bool, lock_timeout: u64) -> Result<ExitCode> {
    let timeout = Duration::from_secs(lock_timeout);
    on_database(conf, async |client, _| {
        let done = |what: &str, names: Vec<String>| {
            match names.is_empty() {
                true => println!("{what}: nothing to run"),
                false => println!("{what}: ran {}", names.join(", ")),
            }
            ExitCode::SUCCESS
        };
        Ok(match action {
            Action::Bootstrap => done("bootstrap", migrations::bootstrap(client, timeout).await?),
            Action::Up => done("up", migrations::up(client, timeout).await?),
            Action::Finish => done("finish", migrations::finish(client, timeout).await?),
            Action::List => {
                for (name, state) in migrations::list(client).await? {
                    println!("{name}: {state}");
                }
                status(&migrations::state(client).await?)
            }
            Action::Status => status(&migrations::state(client).await?),
            Action::Reset if !yes => {
                bail!("reset drops every table Sluice made: confirm with --yes")
            }
            Action::Reset => {
                migrations::reset(client, timeout).await?;
                println!("reset: every Sluice table dropped");
                ExitCode::SUCCESS
            }
        })
    })
}

fn status(state: &State) -> ExitCode {
    match state {
        State::UpToDate => println!("database is up to date"),
        State::NotBootstrapped => println!("database needs bootstrapping: run 'sluice migrations bootstrap'"),
        State::Pending(names) => println!(
            "pending migrations ({}): run 'sluice migrations finish' once every node runs this release",
            names.join(", ")
        ),
        State::New(names) => println!("new migrations ({}): run 'sluice migrations up'", names.join(", ")),
    }
    ExitCode::from(state.exit_code())
}
