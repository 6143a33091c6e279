//! DB mode's node (`database = postgres`): it serves what PostgreSQL holds, follows every change within
//! milliseconds, and runs the Admin API's entity writes.
//!
//! - **Start**: a database that is not bootstrapped or has new migrations is refused, naming the command
//!   to run. An unreachable database is not fatal: the node serves the config its LMDB store kept from
//!   the last run (Kong's #14373 is a node that comes back empty) and catches up when the database returns.
//! - **Follow** ([`DbNode::follow`]): one connection `LISTEN`s; each notification reads only the entities
//!   changed since the node's version (`read::since`), applies them to the node's copy of the entities, and
//!   publishes the new config through the [`Loader`] (compile, store, swap) on a blocking thread, off the
//!   proxy workers. A dropped connection is retried every second, and the catch-up read on reconnect means
//!   no change is missed.
//! - **Writes** ([`DbNode::write`]): one transaction each (`sluice_db::write`); the reply waits until this
//!   node serves the committed version, so a read right after a write sees it.

use crate::loader::Loader;
use deadpool_postgres::Pool;
use sluice_db::read::{self, Row, Since};
use sluice_db::PgSettings;
use sluice_model::declarative::{self, kinds::Kind};
use sluice_model::writes::{EntityWrite, WriteError, Written};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::watch;
use uuid::Uuid;

/// How long a write's reply waits for this node to serve it before answering anyway.
const APPLY_WAIT: Duration = Duration::from_secs(10);
/// Pause between attempts to reach a database that is down.
const RETRY: Duration = Duration::from_secs(1);

/// The node's copy of the database's entities, per kind.
#[derive(Default)]
struct Entities {
    kinds: BTreeMap<Kind, HashMap<Uuid, Row>>,
}

impl Entities {
    /// Every entity as the store's records: kinds in table order, each in creation order.
    fn records(&self) -> Vec<(String, Vec<Vec<u8>>)> {
        let mut out = Vec::with_capacity(self.kinds.len());
        for kind in declarative::kinds::TABLE {
            let Some(rows) = self.kinds.get(kind) else {
                continue;
            };
            let mut rows: Vec<&Row> = rows.values().collect();
            rows.sort_by_key(|r| (r.created_at, r.id));
            out.push((
                kind.key().to_string(),
                rows.into_iter().map(|r| r.body.clone()).collect(),
            ));
        }
        out
    }
}

/// DB mode's state: the pool writes use, the entities the live config was built from, and the version
/// this node serves.
pub struct DbNode {
    pub pool: Pool,
    settings: PgSettings,
    loader: Arc<Loader>,
    entities: Mutex<Entities>,
    /// The database version the live config reflects (0 before the first read).
    applied: watch::Sender<u64>,
}

impl DbNode {
    pub fn new(settings: PgSettings, loader: Arc<Loader>) -> anyhow::Result<Arc<DbNode>> {
        let pool = sluice_db::connect(&settings).map_err(|e| anyhow::anyhow!("database: {e}"))?;
        Ok(Arc::new(DbNode {
            pool,
            settings,
            loader,
            entities: Mutex::new(Entities::default()),
            applied: watch::channel(0).0,
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
        {
            let mut entities = self.lock();
            entities.kinds.clear();
            for (kind, rows) in all.kinds {
                entities
                    .kinds
                    .insert(kind, rows.into_iter().map(|r| (r.id, r)).collect());
            }
        }
        self.publish(all.version).await
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
                {
                    let mut entities = self.lock();
                    for c in changes {
                        let rows = entities.kinds.entry(c.kind).or_default();
                        match c.row {
                            Some(row) => rows.insert(c.id, row),
                            None => rows.remove(&c.id),
                        };
                    }
                }
                self.publish(version).await
            }
        }
    }

    /// Builds the config from the node's entities and makes it live, off the async thread.
    async fn publish(&self, version: u64) -> anyhow::Result<()> {
        let records = self.lock().records();
        let loader = self.loader.clone();
        let hash = format!("{version:032x}");
        tokio::task::spawn_blocking(move || {
            let config = declarative::from_store("3.0".into(), hash, records)
                .map_err(|e| anyhow::anyhow!("the database holds {e}"))?;
            loader.apply(config).map_err(|e| anyhow::anyhow!("{e}"))
        })
        .await??;
        self.applied.send_replace(version);
        tracing::debug!(version, "database changes applied");
        Ok(())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Entities> {
        self.entities.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Follows the database until the process ends: listen, catch up, apply each notified version;
    /// reconnect after a drop.
    pub async fn follow(self: Arc<Self>) {
        loop {
            match sluice_db::follow::listen(&self.settings).await {
                Ok((mut client, mut versions)) => {
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
                    tracing::warn!("lost the database connection; reconnecting");
                }
                Err(e) => tracing::debug!(error = %e, "database still unreachable"),
            }
            tokio::time::sleep(RETRY).await;
        }
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
