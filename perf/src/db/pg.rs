//! The PostgreSQL side of `sluice-perf db`: a database of the run's own (created with `psql`, dropped
//! with `DROP DATABASE ... WITH (FORCE)` when the guard is dropped, on an error too, and by the
//! interrupt handler on Ctrl-C), bootstrapped and filled with the sluice binary's own commands.

use crate::interrupt::{self, Held};
use crate::progress;
use anyhow::{bail, Context, Result};
use std::path::Path;
use std::process::Command;

/// Where the server is (`--pg-host/--pg-port/--pg-user`; trust authentication, or `PGPASSWORD`); the
/// options of `sluice-perf db` and of `sluice-perf cluster --cp-database postgres`.
#[derive(clap::Args, Clone, Debug)]
pub struct Server {
    /// PostgreSQL host.
    #[arg(long = "pg-host", default_value = "127.0.0.1")]
    pub host: String,
    /// PostgreSQL port.
    #[arg(long = "pg-port", default_value_t = 5432)]
    pub port: u16,
    /// PostgreSQL user (must be allowed to create databases).
    #[arg(long = "pg-user", default_value = "postgres")]
    pub user: String,
}

impl Server {
    /// `psql` on the `postgres` maintenance database running one statement.
    fn psql_argv(&self, sql: &str) -> Vec<String> {
        [
            "psql",
            "-h",
            &self.host,
            "-p",
            &self.port.to_string(),
            "-U",
            &self.user,
            "-d",
            "postgres",
            "-v",
            "ON_ERROR_STOP=1",
            "-qAtX",
            "-c",
            sql,
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    }

    fn psql(&self, sql: &str) -> Result<()> {
        let argv = self.psql_argv(sql);
        let out = Command::new(&argv[0])
            .args(&argv[1..])
            .env("PGCONNECT_TIMEOUT", "5")
            .output()
            .context("running psql (is the PostgreSQL client installed?)")?;
        if !out.status.success() {
            bail!(
                "psql `{sql}` on {}:{} failed: {}",
                self.host,
                self.port,
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        Ok(())
    }
}

/// A database created for this run; dropped (with its connections) on drop.
pub struct Database {
    server: Server,
    pub name: String,
    _held: Held,
}

impl Database {
    /// Creates `name` (a fresh, unique name) on `server`.
    pub fn create(server: &Server, name: &str) -> Result<Database> {
        server.psql(&format!("CREATE DATABASE \"{name}\""))?;
        progress(format!("created database {name}"));
        let drop_argv = server.psql_argv(&drop_sql(name));
        Ok(Database {
            server: server.clone(),
            name: name.to_string(),
            _held: interrupt::hold_command(&drop_argv),
        })
    }

    /// The settings a sluice node or command needs to use this database.
    pub fn env(&self) -> Vec<(String, String)> {
        [
            ("SLUICE_DATABASE", "postgres".to_string()),
            ("SLUICE_PG_HOST", self.server.host.clone()),
            ("SLUICE_PG_PORT", self.server.port.to_string()),
            ("SLUICE_PG_USER", self.server.user.clone()),
            ("SLUICE_PG_DATABASE", self.name.clone()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    }

    /// Runs `sluice <args>` against this database; fails with its output when it fails.
    pub fn sluice(&self, bin: &Path, args: &[&str]) -> Result<String> {
        let out = Command::new(bin)
            .args(args)
            .envs(self.env())
            .output()
            .with_context(|| format!("running {} {}", bin.display(), args.join(" ")))?;
        if !out.status.success() {
            bail!(
                "`sluice {}` failed ({}): {}{}",
                args.join(" "),
                out.status,
                String::from_utf8_lossy(&out.stdout).trim(),
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    }
}

impl Drop for Database {
    fn drop(&mut self) {
        match self.server.psql(&drop_sql(&self.name)) {
            Ok(()) => progress(format!("dropped database {}", self.name)),
            Err(e) => progress(format!(
                "warning: could not drop database {}: {e:#}",
                self.name
            )),
        }
    }
}

fn drop_sql(name: &str) -> String {
    format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)")
}

/// A database name no other run uses: `sluice_perf_<pid>_<unix ms>_<suffix>`.
pub fn unique_name(suffix: &str) -> String {
    let ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0);
    format!("sluice_perf_{}_{ms}_{suffix}", std::process::id())
}
