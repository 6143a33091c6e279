//! DB mode's node (`database = postgres`): it serves what PostgreSQL holds, follows every change within
//! milliseconds, and runs the Admin API's entity writes.
//!
//! - **Start**: a database that is not bootstrapped or has new migrations is refused, naming the command
//!   to run. An unreachable database is not fatal: the node serves the config its LMDB store kept from
//!   the last run (Kong's #14373 is a node that comes back empty) and catches up when the database returns.
//! - **Follow** ([`DbNode::follow`]): one connection `LISTEN`s; each notification reads only the entities
//!   changed since the node's version (`read::since`), patches a copy of the live config with them, and
//!   publishes it through the [`Loader`] (compile, store, swap) on a blocking thread, off the
//!   proxy workers. A dropped connection is retried every second, and the catch-up read on reconnect means
//!   no change is missed.
//! - **Writes** ([`DbNode::write`]): one transaction each (`sluice_db::write`); the reply waits until this
//!   node serves the committed version, so a read right after a write sees it.

use crate::loader::{EntityChange, Loader};
use deadpool_postgres::Pool;
use sluice_db::read::{self, Since};
use sluice_db::PgSettings;
use sluice_model::writes::{EntityWrite, WriteError, Written};
use sluice_model::{declarative, Config};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// How long a write's reply waits for this node to serve it before answering anyway.
const APPLY_WAIT: Duration = Duration::from_secs(10);
/// A change set larger than this is applied by reading everything again.
const WHOLE_READ_ABOVE: usize = 1000;
/// Pause between attempts to reach a database that is down.
const RETRY: Duration = Duration::from_secs(1);

/// DB mode's state: the pool writes use, the entities the live config was built from, and the version
/// this node serves.
pub struct DbNode {
    pub pool: Pool,
    settings: PgSettings,
    loader: Arc<Loader>,
    /// The database version the live config reflects (0 before the first read).
    applied: watch::Sender<u64>,
    /// The listening connection is up (`GET /status` `database.reachable`).
    reachable: AtomicBool,
}

impl DbNode {
    pub fn new(settings: PgSettings, loader: Arc<Loader>) -> anyhow::Result<Arc<DbNode>> {
        let pool = sluice_db::connect(&settings).map_err(|e| anyhow::anyhow!("database: {e}"))?;
        Ok(Arc::new(DbNode {
            pool,
            settings,
            loader,
            applied: watch::channel(0).0,
            reachable: AtomicBool::new(false),
        }))
    }

    /// At start: refuse a database that needs migrations; load what it holds, or, when it cannot be
    /// reached, what the store kept.
    pub async fn start(&self) -> anyhow::Result<()> {
        let client = match self.pool.get().await {
            Ok(c) => c,
            Err(e) => {
                tracing::error!(database = %self.settings.describe(), error = %e,
                    "the database is unreachable: serving the configuration kept in the store");
                let loader = self.loader.clone();
                tokio::task::spawn_blocking(move || loader.load_from_store()).await??;
                return Ok(());
            }
        };
        let state = sluice_db::migrations::state(&client).await?;
        if let Some(refusal) = state.refusal() {
            anyhow::bail!("database {}: {refusal}", self.settings.describe());
        }
        drop(client);
        self.catch_up_all().await
    }

    /// Reads every entity and publishes them.
    async fn catch_up_all(&self) -> anyhow::Result<()> {
        let mut client = self.pool.get().await?;
        let all = read::everything(&mut client).await?;
        let records = all
            .kinds
            .into_iter()
            .map(|(kind, rows)| {
                (
                    kind.key().to_string(),
                    rows.into_iter().map(|r| r.body).collect(),
                )
            })
            .collect();
        let config = declarative::from_store("3.0".into(), hash(all.version), records)
            .map_err(|e| anyhow::anyhow!("the database holds {e}"))?;
        self.publish(all.version, config, None).await
    }

    /// Reads the changes after the applied version and publishes them (everything when the log does not
    /// reach back far enough).
    async fn catch_up(&self, client: &mut tokio_postgres::Client) -> anyhow::Result<()> {
        let after = *self.applied.borrow();
        if after == 0 {
            return self.catch_up_all().await;
        }
        match read::since(client, after).await? {
            Since::TooOld => self.catch_up_all().await,
            Since::Changes { version, changes } => {
                if version == after {
                    return Ok(());
                }
                if changes.len() > WHOLE_READ_ABOVE {
                    // Patching entity by entity costs a scan of its kind each: read everything instead.
                    return self.catch_up_all().await;
                }
                let changes: Vec<EntityChange> = changes
                    .into_iter()
                    .map(|c| EntityChange {
                        kind: c.kind,
                        id: c.id,
                        body: c.row.map(|r| r.body),
                    })
                    .collect();
                // The live config is the database at the applied version (only this loop applies in DB
                // mode): a copy of it, patched with the changes, is the next one.
                let mut config = Config::clone(self.loader.snapshot().load().config());
                for c in &changes {
                    match &c.body {
                        Some(body) => declarative::upsert_entity(&mut config, c.kind, body)
                            .map_err(|e| {
                                anyhow::anyhow!("unreadable {} {}: {e}", c.kind.singular(), c.id)
                            })?,
                        None => {
                            declarative::remove_entity(&mut config, c.kind, c.id);
                        }
                    }
                }
                declarative::attach_snis(&mut config);
                config.hash = hash(version);
                self.publish(version, config, Some(changes)).await
            }
        }
    }

    /// Makes `config` live off the async thread (writing only `changes` to the store when given).
    async fn publish(
        &self,
        version: u64,
        config: Config,
        changes: Option<Vec<EntityChange>>,
    ) -> anyhow::Result<()> {
        let loader = self.loader.clone();
        tokio::task::spawn_blocking(move || {
            loader
                .apply(config, changes.as_deref())
                .map_err(|e| anyhow::anyhow!("{e}"))
        })
        .await??;
        self.applied.send_replace(version);
        tracing::debug!(version, "database changes applied");
        Ok(())
    }

    /// Follows the database until the process ends: listen, catch up, apply each notified version;
    /// reconnect after a drop.
    pub async fn follow(self: Arc<Self>) {
        loop {
            match sluice_db::follow::listen(&self.settings).await {
                Ok((mut client, mut versions)) => {
                    self.reachable.store(true, Ordering::Relaxed);
                    tracing::info!(database = %self.settings.describe(), "following the database");
                    if let Err(e) = self.catch_up(&mut client).await {
                        tracing::error!(error = %format!("{e:#}"), "could not apply database changes");
                    }
                    while let Some(version) = versions.recv().await {
                        while versions.try_recv().is_ok() {}
                        if version <= *self.applied.borrow() {
                            continue;
                        }
                        if let Err(e) = self.catch_up(&mut client).await {
                            tracing::error!(error = %format!("{e:#}"), "could not apply database changes");
                        }
                    }
                    self.reachable.store(false, Ordering::Relaxed);
                    tracing::warn!("lost the database connection; reconnecting");
                }
                Err(e) => tracing::debug!(error = %e, "database still unreachable"),
            }
            tokio::time::sleep(RETRY).await;
        }
    }

    /// Deletes ended rate-limiting windows (`policy: cluster`) and expired oauth2 codes and tokens every
    /// minute, until the process ends.
    pub async fn expire_counters(self: Arc<Self>) {
        let mut every = tokio::time::interval(Duration::from_secs(60));
        loop {
            every.tick().await;
            if let Ok(client) = self.pool.get().await {
                if let Err(e) = sluice_db::counters::expire(&client).await {
                    tracing::debug!(error = %e, "could not expire rate-limiting counters");
                }
                if let Err(e) = sluice_db::oauth2::expire(&client).await {
                    tracing::debug!(error = %e, "could not expire oauth2 codes and tokens");
                }
            }
        }
    }

    /// Whether the node's listening connection to the database is up.
    pub fn reachable(&self) -> bool {
        self.reachable.load(Ordering::Relaxed)
    }

    /// Runs one Admin API write and waits until this node serves it.
    pub async fn write(&self, w: EntityWrite) -> Result<Written, WriteError> {
        let registry = self.loader.registry().clone();
        let (written, version) = sluice_db::write::write(&self.pool, registry.as_ref(), w).await?;
        if let Some(version) = version {
            let mut applied = self.applied.subscribe();
            let waited =
                tokio::time::timeout(APPLY_WAIT, applied.wait_for(|v| *v >= version)).await;
            if waited.is_err() {
                tracing::warn!(
                    version,
                    "a write is committed but not yet applied on this node"
                );
            }
        }
        Ok(written)
    }
}

/// The `configuration_hash` of the config at database `version`.
fn hash(version: u64) -> String {
    format!("{version:032x}")
}
