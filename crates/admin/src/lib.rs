//! Sluice's Admin API and status listener: Kong's paths, list shapes and error bodies, in DB-less mode.
//!
//! This crate is only the HTTP surface. What it serves and how configs are loaded comes from the binary
//! through the [`Control`] trait, so the API can be tested over any implementation.

use sluice_model::{Config, ConfigErrors};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

mod body;
mod config;
mod entities;
mod info;
mod page;
mod reply;
mod server;

pub use server::{serve_admin, serve_status};

/// A boxed future, as [`Control::load`] returns.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// What the Admin API needs from the node.
pub trait Control: Send + Sync + 'static {
    /// The live config (an empty one before any load).
    fn config(&self) -> Arc<Config>;
    /// The live config's hash; None before any load.
    fn config_hash(&self) -> Option<String>;
    /// A config is live.
    fn is_ready(&self) -> bool;
    /// Validate, compile, store and publish a declarative document.
    fn load(
        &self,
        doc: serde_json::Value,
        opts: LoadOptions,
    ) -> BoxFuture<Result<LoadOutcome, LoadError>>;
    /// Facts for `GET /`.
    fn node_info(&self) -> NodeInfo;
    /// Kong's `server` block of `GET /status` (connection and request counters).
    fn server_status(&self) -> serde_json::Value;
}

/// Options of `POST /config`.
#[derive(Debug, Clone, Copy, Default)]
pub struct LoadOptions {
    /// `?check_hash=1`: an unchanged config is not reloaded (304).
    pub check_hash: bool,
}

/// A successful `POST /config`.
pub enum LoadOutcome {
    Loaded(Arc<Config>),
    Unchanged,
}

/// A refused `POST /config`.
pub enum LoadError {
    /// 400, code 14, with every field error.
    Invalid(ConfigErrors),
    /// 429: another load is running.
    Busy,
    /// 413: the store is too small.
    TooLarge(String),
    /// 500.
    Internal(String),
}

/// Node facts for `GET /`.
#[derive(Debug, Clone)]
pub struct NodeInfo {
    pub version: String,
    pub hostname: String,
    pub node_id: uuid::Uuid,
    /// Plugin names with their priorities.
    pub plugins_available: Vec<(String, i32)>,
    /// The node settings, as `configuration`.
    pub configuration: serde_json::Value,
}
