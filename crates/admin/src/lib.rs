//! Sluice's Admin API and status listener: Kong 3.x's DB-less paths, list shapes and error bodies.
//!
//! This crate is only the HTTP surface. What it serves and how configs are loaded come from the binary
//! through the [`Control`] trait, so the API can be tested over any implementation.
//!
//! - [`serve_admin`]: `/`, `/status`, `/config` (GET export, POST load), every entity collection with
//!   Kong's pagination, tags filters, nested and owner paths, and DB-less' 405 refusals of entity writes.
//! - [`serve_status`]: `/status`, `/status/ready`, `/metrics` (rendered by [`Control::metrics`]).
//!
//! Layout: `server` (accept loop, common headers) → `handlers` (dispatch by `router` endpoint) →
//! `catalog` (collections and relations), `pagination`, `body` (`POST /config` bodies); `errors` is the one
//! place failures become responses.

use sluice_model::writes::{EntityWrite, WriteError, Written};
use sluice_model::{Config, ConfigErrors, PluginRegistry};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

mod body;
mod catalog;
mod deadline;
mod errors;
mod form;
#[doc(hidden)]
pub mod fuzzing;
mod handlers;
mod pagination;
mod query;
mod reply;
mod router;
mod server;

pub use handlers::status::resident_bytes;
pub use handlers::WRITE_PERMITS;
pub use server::{serve_admin, serve_status, ServeLimits};

/// A boxed future, as [`Control::load`] returns.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// What the Admin API needs from the node. The binary implements it over its loader and settings; tests
/// implement it over a plain [`Config`].
pub trait Control: Send + Sync + 'static {
    /// The live config (an empty one before any load). Called once per entity request.
    fn config(&self) -> Arc<Config>;
    /// The live config's hash (`GET /status` `configuration_hash`); None before any load.
    fn config_hash(&self) -> Option<String>;
    /// Whether a config is live (`/status/ready` answers 200).
    fn is_ready(&self) -> bool;
    /// Parses ([`ConfigBody::document`]), validates, compiles, stores and publishes the body of a
    /// `POST /config`. Parsing is left to the node so that a large body is parsed, loaded and freed on
    /// the one thread that does the CPU work, off the Admin API's async thread.
    fn load(
        &self,
        body: ConfigBody,
        opts: LoadOptions,
    ) -> BoxFuture<Result<LoadOutcome, LoadError>>;
    /// Facts for `GET /` and `GET /plugins/enabled`.
    fn node_info(&self) -> NodeInfo;
    /// Kong's `server` block of `GET /status` (connection and request counters).
    fn server_status(&self) -> serde_json::Value;
    /// The worker runtimes' tasks, Sluice's counterpart of nginx's timers, for `GET /timers` and `GET /`'s
    /// `timers`; None (the default) before the proxy runs.
    fn tasks(&self) -> Option<Tasks> {
        None
    }
    /// The node's stores that stand for Kong's shared dictionaries (proxy-cache's memory stores): name,
    /// bytes held and bound, by name; for `GET /status`'s `lua_shared_dicts`.
    fn shared_dicts(&self) -> Vec<(String, usize, usize)> {
        Vec::new()
    }
    /// The Prometheus text exposition served at `GET /metrics` on both listeners; None (the default) when
    /// the node has no metrics, and `/metrics` answers 404.
    fn metrics(&self) -> Option<String> {
        None
    }
    /// The health of each target (`host:port`) of the upstream named `upstream` in the live snapshot, as
    /// Kong's words (`HEALTHY`, `UNHEALTHY`, `HEALTHCHECKS_OFF`); None when there is no such upstream.
    fn target_health(&self, _upstream: &str) -> Option<Vec<(String, &'static str)>> {
        None
    }
    /// proxy-cache's cached object under `key` (Kong's JSON of it), in the store of the proxy-cache plugin
    /// `plugin`, or of any proxy-cache plugin when None; None (the default) when there is none.
    fn proxy_cache_get(
        &self,
        _plugin: Option<uuid::Uuid>,
        _key: &str,
    ) -> Option<serde_json::Value> {
        None
    }
    /// Purges `key` as [`Control::proxy_cache_get`] finds it (true when it was there), or, `key` None,
    /// every proxy-cache plugin's whole store (true).
    fn proxy_cache_purge(&self, _plugin: Option<uuid::Uuid>, _key: Option<&str>) -> bool {
        false
    }
    /// A control plane's data planes (Kong's `clustering_data_planes` rows); None on a node that is not a
    /// control plane (the default).
    fn data_planes(&self) -> Option<Vec<serde_json::Value>> {
        None
    }
    /// Whether the upstream would pick a target now (`?balancer_health=1`).
    fn upstream_available(&self, _upstream: &str) -> bool {
        false
    }
    /// Marks a target of the live snapshot healthy or unhealthy by hand; false when the upstream or the
    /// target does not exist.
    fn set_target_health(&self, _upstream: &str, _target: &str, _healthy: bool) -> bool {
        false
    }
    /// The plugins this node implements (plugin schemas and `/schemas/.../validate`); None answers 404.
    fn registry(&self) -> Option<&dyn PluginRegistry> {
        None
    }
    /// `GET /status` `database.reachable`: whether the node reaches its database (always true DB-less).
    fn database_reachable(&self) -> bool {
        true
    }
    /// True when the node runs on a database (`database = postgres`): entity writes go to
    /// [`Control::write`] and `POST /config` is refused. False (the default): DB-less' refusals.
    fn db_mode(&self) -> bool {
        false
    }
    /// True on a hybrid data plane (`role = data_plane`): its config comes from the control plane, so
    /// `POST /config` is refused and the Admin API is read-only. False (the default).
    fn data_plane(&self) -> bool {
        false
    }
    /// The oauth2 plugin's tokens (DB mode): every live one (`key` None), or the one whose id or access
    /// token is `key`, as Kong's JSON; deleted first with `delete`. None (the default): the node has none.
    fn oauth2_tokens(
        &self,
        _key: Option<String>,
        _delete: bool,
    ) -> BoxFuture<Option<Result<Vec<serde_json::Value>, String>>> {
        Box::pin(async { None })
    }
    /// Runs one entity write (DB mode). It returns once the node itself serves the result, so a read
    /// right after the write sees it.
    fn write(&self, _write: EntityWrite) -> BoxFuture<Result<Written, WriteError>> {
        Box::pin(async { Err(WriteError::Unavailable("this node has no database".into())) })
    }
}

/// Options of `POST /config`.
#[derive(Debug, Clone, Copy, Default)]
pub struct LoadOptions {
    /// `?check_hash=1`: a config whose hash equals the live one is not reloaded (304).
    pub check_hash: bool,
}

/// The body of a `POST /config`, as received.
pub struct ConfigBody {
    content_type: String,
    bytes: bytes::Bytes,
}

impl ConfigBody {
    /// A body sent with this `Content-Type`.
    pub fn new(content_type: &str, bytes: bytes::Bytes) -> ConfigBody {
        ConfigBody {
            content_type: content_type.to_string(),
            bytes,
        }
    }

    /// The declarative document in the body (raw JSON or YAML, a form field `config`, or
    /// `{"config": "..."}`), or the error `POST /config` answers with ([`LoadError::Body`]).
    pub fn document(&self) -> Result<serde_json::Value, LoadError> {
        body::declarative_doc(&self.content_type, &self.bytes)
            .map_err(|e| LoadError::Body(BodyError(e)))
    }
}

/// Why a `POST /config` body holds no declarative document (answered as Kong does: 400).
pub struct BodyError(errors::ApiError);

/// Each entity of a loaded config as JSON, exactly as the Admin API serializes it, per collection schema
/// name (`routes`, `keyauth_credentials`, ...) in config order. A node that already serialized them (for its
/// store) hands them over, and the `POST /config` reply copies them instead of serializing them again.
pub type EntityJson = Vec<(&'static str, Vec<Vec<u8>>)>;

/// A successful `POST /config`.
pub enum LoadOutcome {
    /// The new config is live; the response lists its entities (201), from the [`EntityJson`] when given.
    Loaded(Arc<Config>, Option<EntityJson>),
    /// `check_hash` was set and the hash is unchanged (304).
    Unchanged,
}

/// A refused `POST /config`.
pub enum LoadError {
    /// The body is empty, not UTF-8, or not JSON/YAML (from [`ConfigBody::document`]).
    Body(BodyError),
    /// 400, code 14, with every field error.
    Invalid(ConfigErrors),
    /// 429 with `Retry-After`: another load is running.
    Busy,
    /// 413 with this message: the config does not fit the store.
    TooLarge(String),
    /// 500; the detail is logged, not sent.
    Internal(String),
}

/// The worker runtimes' tasks ([`Control::tasks`]).
#[derive(Debug, Clone, Copy)]
pub struct Tasks {
    /// Tasks alive on the worker runtimes (connections, health probes, log deliveries...).
    pub alive: usize,
    /// Tasks queued to run now.
    pub queued: usize,
    /// Worker runtimes.
    pub workers: usize,
}

/// Node facts for `GET /`.
#[derive(Debug, Clone)]
pub struct NodeInfo {
    /// The version reported as `version`: the Kong version whose Admin API this node implements (decK and
    /// Kong Manager parse it as a Kong version and branch on it).
    pub version: String,
    /// Sluice's own version (`sluice_version`).
    pub sluice_version: String,
    pub hostname: String,
    pub node_id: uuid::Uuid,
    /// The plugins this node implements, with their priorities.
    pub plugins_available: Vec<(String, i32)>,
    /// The node settings, as `configuration` (secrets already redacted).
    pub configuration: serde_json::Value,
}
