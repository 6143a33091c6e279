//! DB mode's node (`database = postgres`): it serves what PostgreSQL holds, follows every change within
//! milliseconds, and runs the Admin API's entity writes.
//!
//! - **Start**: a database that is not bootstrapped or has new migrations is refused, naming the command
//!   to run. An unreachable database is not fatal: the node serves the config its LMDB store kept from
//!   the last run (Kong's #14373 is a node that comes back empty) and catches up when the database returns.
//! - **Follow** ([`DbNode::follow`]): one connection `LISTEN`s; each notification reads only the entities
//!   changed since the node's version (`read::since`), patches the live config with them (into the
//!   config before it when no request holds that one any more: [`spare`]), and
//!   publishes it through the [`Loader`] (compile, swap) on a blocking thread, off the
//!   proxy workers; the changes reach the node's store in batches, every [`STORE_BATCH`](crate::loader::STORE_BATCH). A dropped connection is retried every second, and the catch-up read on reconnect means
//!   no change is missed. The notifications queued behind one are folded into one read that must reach
//!   the newest of them (it is read again, briefly, until it does); with no notification for
//!   [`POLL`] the node reads anyway, as a backstop.
//! - **Target health** set by hand on one node is sent to the others ([`DbNode::broadcast_health`], a
//!   `NOTIFY` on its own channel) and applied by each one's listener, as Kong's cluster events do.
//! - **Writes** ([`DbNode::write`]): one transaction each (`sluice_db::write`); the reply waits until this
//!   node serves the committed version, so a read right after a write sees it.

pub(crate) mod spare;

use crate::loader::{EntityChange, Loader, Patch};
use deadpool_postgres::Pool;
use sluice_db::health::HealthNotice;
use sluice_db::read::{self, Since};
use sluice_db::PgSettings;
use sluice_model::writes::{EntityWrite, WriteError, Written};
use sluice_model::{declarative, Config};
use spare::Spare;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc::UnboundedReceiver;
use tokio::sync::watch;

/// How long a write's reply waits for this node to serve it before answering anyway.
const APPLY_WAIT: Duration = Duration::from_secs(10);
/// A change set larger than this is applied by reading everything again.
const WHOLE_READ_ABOVE: usize = 1000;
/// Pause between attempts to reach a database that is down.
const RETRY: Duration = Duration::from_secs(1);
/// A node notified of nothing for this long reads the changes anyway (a backstop: notifications are
/// how changes arrive).
const POLL: Duration = Duration::from_secs(2);
/// Reads of a notified version that the database does not show yet, and the first pause between them
/// (doubled each time).
const REREADS: u32 = 5;
const REREAD_PAUSE: Duration = Duration::from_millis(5);

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
    /// Tells this node's health notices from the others'.
    node: uuid::Uuid,
    /// The live config was read from the database (not the store): later reads need only the changes.
    synced: AtomicBool,
    /// The config before the live one, for the next change to be built on ([`spare`]).
    spare: Mutex<Option<Spare>>,
}

impl DbNode {
    pub fn new(settings: PgSettings, loader: Arc<Loader>) -> anyhow::Result<Arc<DbNode>> {
        let pool = sluice_db::connect(&settings).map_err(|e| anyhow::anyhow!("database: {e}"))?;
        loader.defer_change_commits(crate::loader::STORE_BATCH);
        Ok(Arc::new(DbNode {
            pool,
            settings,
            loader,
            applied: watch::channel(0).0,
            reachable: AtomicBool::new(false),
            node: uuid::Uuid::new_v4(),
            synced: AtomicBool::new(false),
            spare: Mutex::new(None),
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
        self.catch_up_all().await.map(|_| ())
    }

    /// Reads every entity and publishes them; returns the version read.
    async fn catch_up_all(&self) -> anyhow::Result<u64> {
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
        *self.spare.lock().unwrap_or_else(|p| p.into_inner()) = None;
        self.publish(all.version, config, None).await?;
        self.synced.store(true, Ordering::Relaxed);
        Ok(all.version)
    }

    /// Reads the changes after the applied version and publishes them (everything when the log does not
    /// reach back far enough); returns the version read.
    async fn catch_up(&self, client: &mut tokio_postgres::Client) -> anyhow::Result<u64> {
        let after = *self.applied.borrow();
        if !self.synced.load(Ordering::Relaxed) {
            return self.catch_up_all().await;
        }
        match read::since(client, after).await? {
            Since::TooOld => self.catch_up_all().await,
            Since::Changes { version, changes } => {
                if version == after {
                    return Ok(version);
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
                // mode): it, patched with the changes, is the next one (built on the spare when it can).
                let live = self.loader.snapshot().load().config().clone();
                let spare = self.spare.lock().unwrap_or_else(|p| p.into_inner()).take();
                let (mut config, in_place) = spare::next(spare, &live, after, &changes)?;
                config.hash = hash(version);
                let patch = Some((live.clone(), changes, in_place));
                let changes = self.publish(version, config, patch).await?;
                *self.spare.lock().unwrap_or_else(|p| p.into_inner()) =
                    Some(Spare::new(live, changes, version));
                Ok(version)
            }
        }
    }

    /// Makes `config` live off the async thread (writing only `changes` to the store when given, with
    /// the live config they patch). Returns `changes` (empty when None).
    async fn publish(
        &self,
        version: u64,
        config: Config,
        changes: Option<(Arc<Config>, Vec<EntityChange>, spare::InPlace)>,
    ) -> anyhow::Result<Vec<EntityChange>> {
        let loader = self.loader.clone();
        let changes = tokio::task::spawn_blocking(move || {
            let patch = changes.as_ref().map(|(base, changes, in_place)| Patch {
                base,
                changes,
                routes_in_place: in_place.as_deref(),
            });
            let applied = loader
                .apply(config, patch)
                .map_err(|e| anyhow::anyhow!("{e}"));
            applied.map(|_| changes.map(|(_, c, _)| c).unwrap_or_default())
        })
        .await??;
        self.applied.send_replace(version);
        tracing::debug!(version, "database changes applied");
        Ok(changes)
    }

    /// Follows the database until the process ends: listen, catch up, apply each notified version;
    /// reconnect after a drop. Without notifications it still reads every [`POLL`], so a change is
    /// never missed for longer than that whatever happens to a notification.
    pub async fn follow(self: Arc<Self>) {
        loop {
            match sluice_db::follow::listen(&self.settings).await {
                Ok(listening) => {
                    let (mut client, mut versions) = (listening.client, listening.versions);
                    tokio::spawn(self.clone().apply_health(listening.health));
                    self.reachable.store(true, Ordering::Relaxed);
                    tracing::info!(database = %self.settings.describe(), "following the database");
                    self.apply_up_to(&mut client, 0).await;
                    loop {
                        let notified = match tokio::time::timeout(POLL, versions.recv()).await {
                            Ok(Some(first)) => newest(first, &mut versions),
                            Ok(None) => break,
                            Err(_) => 0, // nothing notified for a while: read anyway
                        };
                        self.apply_up_to(&mut client, notified).await;
                    }
                    // The store is what a restart serves until the database is back: it takes the
                    // changes still queued for it now, not at the next batch (and before `/status`
                    // says the database is gone).
                    let loader = self.loader.clone();
                    let _ = tokio::task::spawn_blocking(move || loader.flush_store()).await;
                    self.reachable.store(false, Ordering::Relaxed);
                    tracing::warn!("lost the database connection; reconnecting");
                }
                Err(e) => tracing::debug!(error = %e, "database still unreachable"),
            }
            tokio::time::sleep(RETRY).await;
        }
    }

    /// Reads and applies what changed after the applied version until this node serves `notified` (0:
    /// whatever is there). A read that does not show the notified version yet is repeated a few times;
    /// after that the next notification or poll reads again.
    async fn apply_up_to(&self, client: &mut tokio_postgres::Client, notified: u64) {
        let mut pause = REREAD_PAUSE;
        for _ in 0..REREADS {
            let applied = *self.applied.borrow();
            if notified != 0 && notified <= applied {
                tracing::debug!(notified, applied, "notified version already applied");
                return;
            }
            match self.catch_up(client).await {
                Ok(read) => tracing::debug!(notified, applied, read, "database changes read"),
                Err(e) => {
                    tracing::error!(error = %format!("{e:#}"), "could not apply database changes");
                    return;
                }
            }
            if *self.applied.borrow() >= notified {
                return;
            }
            tokio::time::sleep(pause).await;
            pause *= 2;
        }
        tracing::warn!(
            notified,
            applied = *self.applied.borrow(),
            "notified of a version the database does not show yet; reading again at the next poll"
        );
    }

    /// Applies the target health other nodes set by hand, until the listening connection drops.
    async fn apply_health(self: Arc<Self>, mut notices: UnboundedReceiver<HealthNotice>) {
        while let Some(n) = notices.recv().await {
            if n.node == self.node {
                continue; // set here already
            }
            let found =
                self.loader
                    .snapshot()
                    .load()
                    .set_target_health(&n.upstream, &n.target, n.healthy);
            tracing::debug!(upstream = %n.upstream, target = %n.target, healthy = n.healthy, found,
                "target health set on another node");
        }
    }

    /// Sends a target health set by hand on this node to every other node (in the background: the
    /// Admin request has its answer already). A node that cannot reach the database logs it.
    pub fn broadcast_health(&self, upstream: &str, target: &str, healthy: bool) {
        let notice = HealthNotice {
            upstream: upstream.to_string(),
            target: target.to_string(),
            healthy,
            node: self.node,
        };
        let pool = self.pool.clone();
        tokio::spawn(async move {
            if let Err(e) = sluice_db::health::broadcast(&pool, &notice).await {
                tracing::warn!(error = %e, upstream = %notice.upstream, target = %notice.target,
                    "could not send the target health to the other nodes");
            }
        });
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

/// The newest of `first` and the versions already queued behind it (the queue is emptied: one read
/// covers them all, and it must reach the newest, not the first).
fn newest(first: u64, versions: &mut UnboundedReceiver<u64>) -> u64 {
    let mut newest = first;
    while let Ok(v) = versions.try_recv() {
        newest = newest.max(v);
    }
    newest
}

/// The `configuration_hash` of the config at database `version`.
fn hash(version: u64) -> String {
    format!("{version:032x}")
}
