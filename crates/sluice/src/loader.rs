//! The one path every config takes to go live: parse → validate → compile → commit to the store → publish.
//!
//! File loads at start, SIGHUP reloads and `POST /config` all call [`Loader::load_doc`]. It is CPU work and runs
//! on a blocking thread, never on a proxy worker. Publishing is one `ArcSwap::store`: in-flight requests keep
//! the snapshot they started with. A failure at any step leaves the live config and the store untouched.

use arc_swap::ArcSwap;
use commit::{commit, commit_changes, commit_over};
use sluice_admin::EntityJson;
use sluice_model::declarative::kinds::Kind;
use sluice_model::declarative::{self, Previous, Reusable};
use sluice_model::{Config, ConfigErrors};
use sluice_plugins::Registry;
use sluice_proxy::{RouteIds, SharedSnapshot, Snapshot};
use sluice_store::Store;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};

mod commit;
mod deferred;
mod retire;
pub use commit::EntityChange;

/// How long an applied change may wait to be written to a DB-mode node's or a data plane's store, with
/// the others of that time ([`Loader::defer_change_commits`]: one LMDB commit per batch, not per change).
pub const STORE_BATCH: Duration = Duration::from_millis(500);

/// A config made from the live one by changing some entities ([`Loader::apply`]).
#[derive(Clone, Copy)]
pub struct Patch<'a> {
    /// The config it was made from: the compile trusts the changes only while this is still the live one.
    pub base: &'a Arc<Config>,
    /// The entities it changed (written to the store as they are).
    pub changes: &'a [EntityChange],
    /// The indexes of the routes it replaced, when it replaced every changed route where it was and
    /// added or removed none (`dbnode::spare::InPlace`): the compile then takes every other route as
    /// the live one of its index without reading it.
    pub routes_in_place: Option<&'a [usize]>,
}

/// What [`Loader::go_live`] is told of a patched config: the config it was made from, the routes it
/// changed, and where it replaced them when it added or removed none ([`Patch::routes_in_place`]).
type Patched<'a> = (&'a Arc<Config>, &'a RouteIds, Option<&'a [usize]>);

impl Patch<'_> {
    fn changed_routes(&self) -> RouteIds {
        let routes = self.changes.iter().filter(|c| c.kind == Kind::Route);
        routes.map(|c| c.id).collect()
    }
}
#[cfg(test)]
mod tests;

/// Why a config did not go live.
#[derive(Debug)]
pub enum LoadError {
    /// The document failed validation; every error is listed.
    Invalid(ConfigErrors),
    /// The document validated but could not be compiled (e.g. a regex the router rejects).
    Compile(String),
    /// Another load is running (`POST /config` answers 429).
    Busy,
    /// The store's map is too small for this config (`POST /config` answers 413).
    TooLarge(String),
    /// The store failed for another reason.
    Store(String),
}

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LoadError::Invalid(errors) => write!(f, "invalid declarative configuration:\n{errors}"),
            LoadError::Compile(msg) => write!(f, "config could not be compiled: {msg}"),
            LoadError::Busy => f.write_str("a configuration load is already in progress"),
            LoadError::TooLarge(msg) | LoadError::Store(msg) => f.write_str(msg),
        }
    }
}

/// What a successful call did.
pub enum Loaded {
    /// The config is live; its entities as JSON (as committed to the store), for the `POST /config` reply.
    Applied(Arc<Config>, EntityJson),
    /// `check_hash` was set and the config equals the live one: nothing changed.
    Unchanged,
}

/// Counters of config loads, for `/metrics`.
#[derive(Default)]
pub struct LoadStats {
    pub succeeded: AtomicU64,
    pub failed: AtomicU64,
    /// Of the last successful load, in microseconds.
    pub last_total_us: AtomicU64,
    pub last_compile_us: AtomicU64,
    /// Entities in the live config.
    pub entities: AtomicU64,
    /// Of the last successful declarative load, the entities copied from the previous load's instead of
    /// validated again.
    pub last_copied: AtomicU64,
}

/// Owns the live snapshot handle and the store; serializes loads.
pub struct Loader {
    registry: Arc<Registry>,
    live: SharedSnapshot,
    store: Store,
    loading: Mutex<()>,
    /// What the next declarative load may reuse of the last one's validated entities, with the config
    /// it indexes (used only while that config is the live one).
    reusable: Mutex<Option<(Weak<Config>, Reusable)>>,
    ready: AtomicBool,
    /// Bumped each time a config goes live (the control plane pushes it to its data planes then).
    published: tokio::sync::watch::Sender<u64>,
    /// Replaced snapshots, freed here rather than by the last request on a worker.
    retired: retire::Retired,
    /// Change sets ([`Loader::apply`] with a patch) queued for the store, when they are written in
    /// batches ([`Loader::defer_change_commits`]).
    deferred: OnceLock<Arc<deferred::Deferred>>,
    pub stats: LoadStats,
}

impl Loader {
    pub fn new(registry: Arc<Registry>, store: Store) -> Loader {
        Loader {
            registry,
            live: Arc::new(ArcSwap::from_pointee(Snapshot::empty())),
            store,
            loading: Mutex::new(()),
            reusable: Mutex::new(None),
            ready: AtomicBool::new(false),
            published: tokio::sync::watch::Sender::new(0),
            retired: Default::default(),
            deferred: OnceLock::new(),
            stats: LoadStats::default(),
        }
    }

    /// From now on, the change sets [`Loader::apply`] makes live reach the store in batches, every
    /// `interval`, one transaction each (DB mode and a hybrid data plane: the database or the control
    /// plane is the source of truth, and a commit per change cost the serving node two `msync`s each). Whole configs are still committed before they
    /// go live. Call [`Loader::flush_store`] before the process exits.
    pub fn defer_change_commits(&self, interval: Duration) {
        self.deferred
            .get_or_init(|| deferred::Deferred::start(self.store.clone(), interval));
    }

    /// Writes the change sets queued for the store now (at shutdown, and before a whole config is
    /// committed so the store never takes an older change after it).
    pub fn flush_store(&self) {
        if let Some(d) = self.deferred.get() {
            d.flush(&self.store);
        }
    }

    /// The handle the proxy workers read.
    pub fn snapshot(&self) -> SharedSnapshot {
        self.live.clone()
    }

    pub fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }

    /// Wakes each time a new config goes live.
    pub fn subscribe(&self) -> tokio::sync::watch::Receiver<u64> {
        self.published.subscribe()
    }

    /// True once a config is live.
    pub fn is_ready(&self) -> bool {
        self.ready.load(Ordering::Acquire)
    }

    /// Loads a parsed declarative document. With `wait` false a concurrent load makes this fail with
    /// [`LoadError::Busy`] instead of queueing (Kong's 429).
    pub fn load_doc(
        &self,
        doc: serde_json::Value,
        check_hash: bool,
        wait: bool,
    ) -> Result<Loaded, LoadError> {
        let _purge = crate::alloc::EagerPurge::start();
        let result = self.load_doc_inner(doc, check_hash, wait);
        let counter = match &result {
            Ok(_) => &self.stats.succeeded,
            Err(LoadError::Busy) => return result,
            Err(_) => &self.stats.failed,
        };
        counter.fetch_add(1, Ordering::Relaxed);
        result
    }

    fn load_doc_inner(
        &self,
        doc: serde_json::Value,
        check_hash: bool,
        wait: bool,
    ) -> Result<Loaded, LoadError> {
        let _guard = if wait {
            self.loading.lock().unwrap_or_else(|p| p.into_inner())
        } else {
            match self.loading.try_lock() {
                Ok(g) => g,
                Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
                Err(std::sync::TryLockError::WouldBlock) => return Err(LoadError::Busy),
            }
        };
        let started = Instant::now();
        let live = self.is_ready().then(|| self.live.load_full());
        let mut kept = self.reusable.lock().unwrap_or_else(|p| p.into_inner());
        let previous = live
            .as_ref()
            .zip(kept.as_ref())
            .and_then(|(live, (of, r))| {
                std::ptr::eq(of.as_ptr(), Arc::as_ptr(live.config())).then_some(Previous {
                    config: live.config(),
                    reusable: r,
                })
            });
        let (mut config, reusable) =
            declarative::parse_value_reusing(doc, self.registry.as_ref(), previous)
                .map_err(LoadError::Invalid)?;
        let hash = config.hash().to_string();
        if check_hash && live.as_ref().is_some_and(|l| l.hash() == hash) {
            return Ok(Loaded::Unchanged);
        }
        // Entities the load stamped with its time keep the live ones' stamps when nothing else changed,
        // so that a reload changes only what it changes (for the compiler, the store and data planes).
        // The store holds the live config: only what differs from it is written.
        // A whole config is committed below: the changes queued for the store go first.
        self.flush_store();
        let (config, json) = match &live {
            Some(live) => {
                let live = live.config().clone();
                let copies = reusable.copies();
                sluice_model::stamps::keep_unchanged_stamps_but(&mut config, &live, copies);
                // A copied route is the live route of its id: only the others are compared (all of
                // them, with no set built, when no route was copied).
                let copied_routes = copies.of(Kind::Route).contains(&true);
                let changed: RouteIds = match copied_routes {
                    true => (config.routes.iter().enumerate())
                        .filter(|(i, _)| !copies.is_copy(Kind::Route, *i))
                        .map(|(_, r)| r.id)
                        .collect(),
                    false => RouteIds::default(),
                };
                let patched = copied_routes.then_some((&live, &changed, None));
                self.go_live(config, started, patched, |store, config, hash| {
                    commit_over(store, config, &live, copies, hash)
                })?
            }
            None => self.go_live(config, started, None, commit)?,
        };
        let copied = reusable.copied();
        self.stats
            .last_copied
            .store(copied as u64, Ordering::Relaxed);
        tracing::info!(
            copied,
            "entities unchanged since the last load were not validated again"
        );
        *kept = Some((Arc::downgrade(&config), reusable));
        Ok(Loaded::Applied(config, json))
    }

    /// Applies a config that is already valid (DB mode builds it from the database's entities, which were
    /// validated when written): compile, commit to the store, publish. Serialized with the other loads.
    /// `changes` are the entities that differ from the live config (None: `config` may differ anywhere,
    /// and the store is rewritten whole); only they are written to the store, at once, or queued for
    /// the next batch after [`Loader::defer_change_commits`]. Returns the config as published.
    pub fn apply(
        &self,
        config: Config,
        patch: Option<Patch<'_>>,
    ) -> Result<Arc<Config>, LoadError> {
        // A few changed entities free little (the unchanged routes' compiled forms are reused): purging
        // eagerly for 2 s after each would keep the proxy workers purging and faulting pages back in
        // all the time under a stream of writes. Only a whole config is worth it.
        let _purge = patch.is_none().then(crate::alloc::EagerPurge::start);
        let _guard = self.loading.lock().unwrap_or_else(|p| p.into_inner());
        let result = match patch {
            None => {
                self.flush_store();
                self.go_live(config, Instant::now(), None, commit)
            }
            Some(patch) => {
                let changed_routes = patch.changed_routes();
                let patched = Some((patch.base, &changed_routes, patch.routes_in_place));
                let deferred = self.deferred.get();
                self.go_live(
                    config,
                    Instant::now(),
                    patched,
                    |store, _, hash| match deferred {
                        Some(d) => {
                            d.push(hash, patch.changes);
                            Ok(Vec::new())
                        }
                        None => commit_changes(store, hash, patch.changes),
                    },
                )
            }
        };
        let counter = match &result {
            Ok(_) => &self.stats.succeeded,
            Err(_) => &self.stats.failed,
        };
        counter.fetch_add(1, Ordering::Relaxed);
        result.map(|(config, _)| config)
    }

    /// Compiles, commits (with `commit`) and publishes `config` (validated `started`..now ago); the caller
    /// holds `loading`.
    /// `patched`: `config` is the given config (the live one, if it still is) with only the given routes
    /// changed (any other route is that config's route of its id), so the others take their compiled
    /// form without a comparison.
    fn go_live(
        &self,
        config: Config,
        started: Instant,
        patched: Option<Patched<'_>>,
        commit: impl FnOnce(&Store, &Config, &str) -> Result<EntityJson, LoadError>,
    ) -> Result<(Arc<Config>, EntityJson), LoadError> {
        let hash = config.hash().to_string();
        let parsed = started.elapsed();
        let config = Arc::new(config);
        // Routes equal to live ones keep their compiled form (the caller holds `loading`: the live
        // snapshot is the one this config replaces).
        let live = self.live.load_full();
        let snapshot = match patched {
            Some((base, changed, in_place)) if Arc::ptr_eq(base, live.config()) => {
                Snapshot::compile_patched_at(
                    config.clone(),
                    &self.registry,
                    &live,
                    changed,
                    in_place,
                )
            }
            _ => Snapshot::compile_after(config.clone(), &self.registry, Some(&live)),
        }
        .map_err(|e| LoadError::Compile(e.to_string()))?;
        drop(live);
        let compiled = started.elapsed();
        let json = commit(&self.store, &config, &hash)?;
        let committed = started.elapsed();
        let stats = &self.stats;
        let us = |d: std::time::Duration| d.as_micros() as u64;
        stats
            .last_total_us
            .store(us(started.elapsed()), Ordering::Relaxed);
        stats
            .last_compile_us
            .store(us(compiled - parsed), Ordering::Relaxed);
        let entities: usize = config.counts().into_iter().map(|(_, n)| n).sum();
        stats.entities.store(entities as u64, Ordering::Relaxed);
        self.publish(snapshot);
        tracing::info!(
            hash = %hash,
            summary = %config.summary(),
            parse_ms = parsed.as_secs_f64() * 1e3,
            compile_ms = (compiled - parsed).as_secs_f64() * 1e3,
            commit_ms = (committed - compiled).as_secs_f64() * 1e3,
            total_ms = started.elapsed().as_secs_f64() * 1e3,
            "configuration loaded"
        );
        Ok((config, json))
    }

    /// Loads a declarative file (YAML or JSON).
    pub fn load_file(&self, path: &std::path::Path) -> Result<Loaded, anyhow::Error> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            anyhow::anyhow!("cannot read declarative config {}: {e}", path.display())
        })?;
        let doc = declarative::to_document(&text)
            .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
        self.load_doc(doc, false, true)
            .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
    }

    /// Serves the last config committed to the store, if there is one. Returns whether one was loaded.
    pub fn load_from_store(&self) -> Result<bool, anyhow::Error> {
        let _purge = crate::alloc::EagerPurge::start();
        let path = self.store.path().display().to_string();
        let Some(stored) = self
            .store
            .load()
            .map_err(|e| anyhow::anyhow!("reading the config store {path}: {e}"))?
        else {
            return Ok(false);
        };
        // Committed configs were validated before they were written: rebuild the typed entities directly.
        let config =
            declarative::from_store(stored.format_version, stored.hash.clone(), stored.entities)
                .map_err(|e| anyhow::anyhow!("the config store {path} holds {e}"))?;
        let entities: usize = config.counts().into_iter().map(|(_, n)| n).sum();
        self.stats
            .entities
            .store(entities as u64, Ordering::Relaxed);
        let snapshot = Snapshot::compile(Arc::new(config), &self.registry)
            .map_err(|e| anyhow::anyhow!("the config in the store {path} does not compile: {e}"))?;
        self.publish(snapshot);
        tracing::info!(hash = %stored.hash, "configuration restored from the store");
        Ok(true)
    }

    fn publish(&self, snapshot: Snapshot) {
        // The previous snapshot is freed here, or off the workers once the last request on it is done.
        self.retired.retire(self.live.swap(Arc::new(snapshot)));
        self.ready.store(true, Ordering::Release);
        self.published.send_modify(|n| *n += 1);
    }
}
