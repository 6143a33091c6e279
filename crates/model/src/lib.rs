//! Sluice's configuration model: Kong's entities, validated.
//!
//! The flow is *outside format → validated model*: [`declarative::parse`] reads Kong's declarative config
//! (`_format_version` "3.0"/"2.1"/"1.1", YAML or JSON, as decK writes it), checks every entity against its
//! [`schema::Schema`], resolves references, generates stable ids, and returns a [`Config`] or *every* error
//! found ([`errors::ConfigErrors`]). Nothing here does I/O, and no input makes it panic.
//!
//! Plugin configs are validated through [`PluginRegistry`], which the plugin crate implements, so this crate
//! does not depend on the plugins.

pub mod declarative;
pub mod entities;
pub mod errors;
#[doc(hidden)]
pub mod kind_table;
pub mod oauth2_secret;
pub mod records;
pub mod schema;
pub mod stamps;
pub mod uri_path;
pub mod writes;

pub use entities::*;
pub use errors::ConfigErrors;
pub use schema::{Field, FieldError, Schema};

/// What the model needs to know about a plugin to validate a plugin entity.
#[derive(Debug, Clone)]
pub struct PluginDef {
    /// Kong's name, e.g. `rate-limiting`.
    pub name: &'static str,
    /// Kong's PRIORITY: higher runs first.
    pub priority: i32,
    /// The schema of the plugin's `config` record, with Kong's defaults.
    pub config: Schema,
    /// The plugin cannot be scoped to a consumer (Kong's `no_consumer`, e.g. key-auth).
    pub no_consumer: bool,
    /// The plugin cannot be scoped to a route.
    pub no_route: bool,
    /// The plugin cannot be scoped to a service.
    pub no_service: bool,
    /// The `protocols` an entity of this plugin gets when it names none, when the plugin's schema has a
    /// default of its own (Kong's ip-restriction: the stream protocols too); None: the plugin entity's
    /// default, `grpc, grpcs, http, https`.
    pub protocols: Option<&'static [&'static str]>,
}

/// The plugins this build implements. An enabled plugin entity naming anything else is a config error.
pub trait PluginRegistry: Send + Sync {
    /// The definition of plugin `name`, or None when this build does not implement it.
    fn plugin(&self, name: &str) -> Option<&PluginDef>;
    /// Every implemented plugin name (for `GET /` `plugins.available_on_server`).
    fn names(&self) -> Vec<&'static str>;
}
