//! Where `sluice-perf cluster`'s control plane keeps its config (`--cp-database`), and so what one change
//! costs it: DB-less, each change re-posts the whole document to `POST /config`, which the CP validates
//! whole; on PostgreSQL (as Kong's CPs run), the config is imported once as `sluice-perf db` does it, and
//! each change is one Admin write, `PATCH /routes/rN`, which the CP commits and then follows.

use crate::cases::Case;
use crate::db::{self, measure, pg};
use crate::pin::{Pinned, POSTGRES};
use anyhow::{ensure, Result};
use serde_json::Value;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

/// `--cp-database`: the control plane's `database` setting.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum CpDatabase {
    /// DB-less: the CP loads the generated document, and each change posts it whole to `POST /config`.
    Off,
    /// A PostgreSQL database of the run's own (dropped at the end), the document imported with
    /// `sluice config db_import`; each change is one `PATCH /routes/rN`.
    Postgres,
}

/// How a change reaches the control plane.
pub enum Writes {
    /// The whole document, with the changed route, to `POST /config`.
    Document(Value),
    /// One `PATCH /routes/rN` (the routes are `r0` .. `r{routes - 1}`).
    Entity { routes: usize },
}

impl Writes {
    /// Makes change `n` on the CP at `admin` and returns the new path it gives route i (from `n`): the
    /// route keeps its own `/r{i}`, so a load over the routes finds them all while changes stream in.
    /// Not under `/r`: a route's path is a prefix, and `/r1` would route `/r1-anything` at once.
    pub fn change(&mut self, admin: SocketAddr, n: usize) -> Result<String> {
        let routes = match self {
            Writes::Document(doc) => doc["services"][0]["routes"].as_array().map_or(0, Vec::len),
            Writes::Entity { routes } => *routes,
        };
        ensure!(routes > 0, "the case has no routes");
        let (i, path) = changed_route(n, routes);
        match self {
            Writes::Document(doc) => {
                doc["services"][0]["routes"][i]["paths"] =
                    Value::from(vec![format!("/r{i}"), path.clone()]);
                let reply = db::http::request(admin, "POST", "/config", Some(doc))?;
                ensure!(
                    reply.status == 201,
                    "POST /config answered {}: {}",
                    reply.status,
                    reply.body
                );
            }
            Writes::Entity { .. } => {
                measure::patch_route(admin, i, &path)?;
            }
        }
        Ok(path)
    }
}

/// The route change `n` touches (spread over the routes) and the path it gives it.
pub(super) fn changed_route(n: usize, routes: usize) -> (usize, String) {
    let i = (n * 7919) % routes.max(1);
    (i, format!("/changed/{n}/r{i}"))
}

/// The control plane's store for a run: what to start it with, and how to change it.
pub struct Store {
    /// The declarative file the CP loads (DB-less), or none (it reads its database).
    pub config: Option<PathBuf>,
    /// Settings the CP needs besides its role (`SLUICE_DATABASE`, `SLUICE_PG_*`).
    pub env: Vec<(String, String)>,
    pub writes: Writes,
    /// For the report: the store, and the database's name and import time.
    pub note: String,
    /// PostgreSQL moved to the load CPUs (the CP's database stands for another host, as the CP does).
    pinned: Option<Pinned>,
    /// Dropped (after the nodes, which are declared later) at the end of the run.
    database: Option<pg::Database>,
}

impl Store {
    /// The store `kind` for `doc` (the stamped document of `case`, written at `config`); the database,
    /// when there is one, is on `server`, which is moved to `load_cpus` when it runs here.
    pub fn new(
        kind: CpDatabase,
        doc: Value,
        case: &Case,
        config: &Path,
        bin: &Path,
        server: &pg::Server,
        load_cpus: &str,
    ) -> Result<Store> {
        if kind == CpDatabase::Off {
            return Ok(Store {
                config: Some(config.to_path_buf()),
                env: Vec::new(),
                writes: Writes::Document(doc),
                note: "DB-less (each change: the whole document to `POST /config`)".into(),
                pinned: None,
                database: None,
            });
        }
        let pinned = Pinned::to(&POSTGRES, &server.host, load_cpus, 0)?;
        let (database, import_s) = db::imported(server, bin, "cluster", case, config)?;
        Ok(Store {
            config: None,
            env: database.env(),
            writes: Writes::Entity {
                routes: case.routes,
            },
            note: format!(
                "PostgreSQL {}:{} database `{}` (`sluice config db_import` {import_s:.1} s; each change: one `PATCH /routes/rN`)",
                server.host, server.port, database.name
            ),
            pinned,
            database: Some(database),
        })
    }

    /// Whether the CP has a database (whose CPU per change is then reported).
    pub fn has_database(&self) -> bool {
        self.database.is_some()
    }

    /// Sets the nice value of a local PostgreSQL server moved for the run (with the CP's, while the DP's
    /// RPS is measured).
    pub fn renice(&mut self, nice: i32) {
        if let Some(p) = &mut self.pinned {
            p.renice(nice);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::changed_route;

    #[test]
    fn changes_spread_over_the_routes_with_paths_of_their_own() {
        assert_eq!(changed_route(0, 10_000), (0, "/changed/0/r0".to_string()));
        assert_eq!(
            changed_route(3, 10_000),
            (3757, "/changed/3/r3757".to_string())
        );
        let touched: std::collections::HashSet<usize> =
            (0..100).map(|n| changed_route(n, 10_000).0).collect();
        assert_eq!(touched.len(), 100);
    }
}
