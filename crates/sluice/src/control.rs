//! The binary's side of the Admin API: [`sluice_admin::Control`] over the [`Loader`] and node facts.

use crate::dbnode::DbNode;
use crate::loader::{LoadError, Loaded, Loader};
use crate::settings::Settings;
use sluice_admin::{BoxFuture, ConfigBody, Control, LoadOptions, LoadOutcome, NodeInfo};
use sluice_model::writes::{EntityWrite, WriteError, Written};
use sluice_model::{Config, PluginRegistry};
use sluice_plugins::builtin::proxy_cache;
use sluice_proxy::ProxyStats;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};

/// Node state the Admin API reads and the loader it drives.
pub struct NodeControl {
    pub loader: Arc<Loader>,
    pub settings: Settings,
    pub node_id: uuid::Uuid,
    pub hostname: String,
    /// Set once the proxy workers are running.
    pub proxy_stats: OnceLock<ProxyStats>,
    /// DB mode's database side; None when DB-less.
    pub db: Option<Arc<DbNode>>,
    /// On a control plane: the data planes it has seen (`role = control_plane`).
    pub data_planes: crate::hybrid::cp::DataPlanes,
}

impl Control for NodeControl {
    fn data_planes(&self) -> Option<Vec<serde_json::Value>> {
        if self.settings.cluster.role != crate::hybrid::Role::ControlPlane {
            return None;
        }
        let planes = self.data_planes.lock().unwrap_or_else(|p| p.into_inner());
        let mut rows: Vec<serde_json::Value> = planes
            .values()
            .filter_map(|p| serde_json::to_value(p).ok())
            .collect();
        rows.sort_by(|a, b| a["id"].as_str().cmp(&b["id"].as_str()));
        Some(rows)
    }

    fn config(&self) -> Arc<Config> {
        self.loader.snapshot().load().config().clone()
    }

    fn config_hash(&self) -> Option<String> {
        self.loader
            .is_ready()
            .then(|| self.loader.snapshot().load().hash().to_string())
    }

    fn target_health(&self, upstream: &str) -> Option<Vec<(String, &'static str)>> {
        let health = self.loader.snapshot().load().upstream_health(upstream)?;
        Some(health.into_iter().map(|(t, h)| (t, h.as_str())).collect())
    }

    fn proxy_cache_get(&self, plugin: Option<uuid::Uuid>, key: &str) -> Option<serde_json::Value> {
        let state = self.loader.registry().state();
        proxy_cache::admin::lookup(state, &self.config(), plugin, key)
    }

    fn proxy_cache_purge(&self, plugin: Option<uuid::Uuid>, key: Option<&str>) -> bool {
        let (state, config) = (self.loader.registry().state(), self.config());
        match key {
            Some(key) => proxy_cache::admin::purge(state, &config, plugin, key),
            None => {
                proxy_cache::admin::purge_all(state, &config);
                true
            }
        }
    }

    fn upstream_available(&self, upstream: &str) -> bool {
        self.loader.snapshot().load().upstream_available(upstream)
    }

    fn set_target_health(&self, upstream: &str, target: &str, healthy: bool) -> bool {
        let found = self
            .loader
            .snapshot()
            .load()
            .set_target_health(upstream, target, healthy);
        if let (true, Some(db)) = (found, &self.db) {
            db.broadcast_health(upstream, target, healthy);
        }
        found
    }

    fn is_ready(&self) -> bool {
        self.loader.is_ready()
    }

    fn load(
        &self,
        body: ConfigBody,
        opts: LoadOptions,
    ) -> Pin<Box<dyn Future<Output = Result<LoadOutcome, sluice_admin::LoadError>> + Send + 'static>>
    {
        let loader = self.loader.clone();
        Box::pin(async move {
            // The body is parsed on the loading thread too: the document is allocated and freed there.
            let result = tokio::task::spawn_blocking(move || {
                let _purge = crate::alloc::EagerPurge::start();
                let doc = body.document()?;
                Ok(loader.load_doc(doc, opts.check_hash, false))
            })
            .await;
            let result = match result {
                Ok(Err(body_error)) => return Err(body_error),
                Ok(Ok(loaded)) => Ok(loaded),
                Err(join) => Err(join),
            };
            match result {
                Ok(Ok(Loaded::Applied(config, json))) => {
                    Ok(LoadOutcome::Loaded(config, Some(json)))
                }
                Ok(Ok(Loaded::Unchanged)) => Ok(LoadOutcome::Unchanged),
                Ok(Err(LoadError::Invalid(errors))) => {
                    Err(sluice_admin::LoadError::Invalid(errors))
                }
                Ok(Err(LoadError::Busy)) => Err(sluice_admin::LoadError::Busy),
                Ok(Err(LoadError::TooLarge(msg))) => Err(sluice_admin::LoadError::TooLarge(msg)),
                Ok(Err(other)) => Err(sluice_admin::LoadError::Internal(other.to_string())),
                Err(join) => Err(sluice_admin::LoadError::Internal(format!(
                    "config load task failed: {join}"
                ))),
            }
        })
    }

    fn node_info(&self) -> NodeInfo {
        let registry = self.loader.registry();
        let plugins_available = registry
            .names()
            .into_iter()
            .filter_map(|name| {
                registry
                    .plugin(name)
                    .map(|d| (name.to_string(), d.priority))
            })
            .collect();
        NodeInfo {
            version: crate::KONG_VERSION.to_string(),
            sluice_version: crate::VERSION.to_string(),
            hostname: self.hostname.clone(),
            node_id: self.node_id,
            plugins_available,
            configuration: self.settings.to_json(),
        }
    }

    fn registry(&self) -> Option<&dyn PluginRegistry> {
        Some(self.loader.registry().as_ref())
    }

    fn database_reachable(&self) -> bool {
        self.db.as_ref().is_none_or(|db| db.reachable())
    }

    fn db_mode(&self) -> bool {
        self.db.is_some()
    }

    fn data_plane(&self) -> bool {
        self.settings.cluster.role == crate::hybrid::Role::DataPlane
    }

    fn oauth2_tokens(
        &self,
        key: Option<String>,
        delete: bool,
    ) -> BoxFuture<Option<Result<Vec<serde_json::Value>, String>>> {
        let (db, store) = (
            self.db.clone(),
            self.loader.registry().state().oauth2_store(),
        );
        Box::pin(async move {
            let db = db?;
            let found = async {
                let client = db.pool.get().await.map_err(|e| e.to_string())?;
                let rows = sluice_db::oauth2::tokens(&client, key.as_deref()).await;
                let rows = rows.map_err(|e| e.to_string())?;
                for row in rows.iter().filter(|_| delete) {
                    let deleted = sluice_db::oauth2::delete(&client, false, row.id).await;
                    deleted.map_err(|e| e.to_string())?;
                    store.iter().for_each(|s| s.forget(&row.access_token));
                }
                Ok(rows
                    .iter()
                    .map(sluice_db::oauth2::TokenRow::to_json)
                    .collect())
            };
            Some(found.await)
        })
    }

    fn write(&self, write: EntityWrite) -> BoxFuture<Result<Written, WriteError>> {
        let db = self.db.clone();
        Box::pin(async move {
            match db {
                Some(db) => db.write(write).await,
                None => Err(WriteError::Unavailable("this node has no database".into())),
            }
        })
    }

    fn metrics(&self) -> Option<String> {
        Some(crate::metrics::render(self))
    }

    fn tasks(&self) -> Option<sluice_admin::Tasks> {
        let stats = self.proxy_stats.get()?;
        let (alive, queued) = stats.tasks();
        let workers = stats.workers();
        Some(sluice_admin::Tasks {
            alive,
            queued,
            workers,
        })
    }

    fn shared_dicts(&self) -> Vec<(String, usize, usize)> {
        self.loader.registry().state().proxy_caches().usage()
    }

    fn server_status(&self) -> serde_json::Value {
        match self.proxy_stats.get() {
            Some(stats) => stats.to_kong_json(),
            None => serde_json::json!({}),
        }
    }
}
