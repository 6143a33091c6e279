//! Every plugin this build implements: definitions (schemas) for validation and factories for compiling.

use crate::compiled::CompiledPlugins;
use crate::logging::entities::EntityJson;
use crate::plugin::Plugin;
use crate::state::PluginState;
use crate::Credentials;
use sluice_model::{Config, PluginDef, PluginRegistry};
use std::sync::{Arc, OnceLock};

/// What a factory sees when building a plugin instance.
pub struct BuildCtx<'a> {
    pub config: &'a Config,
    pub credentials: &'a Credentials,
    /// State that survives reloads, shared by all snapshots.
    pub state: &'a Arc<PluginState>,
    /// Filled by the first [`BuildCtx::entity_json`] call of this compile.
    pub(crate) entity_json: OnceLock<Arc<EntityJson>>,
}

impl BuildCtx<'_> {
    /// The routes and services of the config being compiled, as JSON: built once per compile by the first
    /// logging plugin that asks, shared by all of them.
    pub fn entity_json(&self) -> Arc<EntityJson> {
        self.entity_json
            .get_or_init(|| Arc::new(EntityJson::build(self.config)))
            .clone()
    }
}

/// Builds an instance from a plugin entity whose `config` already passed the schema (defaults filled).
pub type Factory = fn(&BuildCtx<'_>, &sluice_model::Plugin) -> Result<Arc<dyn Plugin>, String>;

/// One plugin of this build.
pub struct Builtin {
    pub def: PluginDef,
    pub factory: Factory,
}

impl Builtin {
    /// A plugin that may be scoped to services, routes and consumers.
    pub fn new(
        name: &'static str,
        priority: i32,
        config: sluice_model::Schema,
        factory: Factory,
    ) -> Builtin {
        let def = PluginDef {
            name,
            priority,
            config,
            no_consumer: false,
            no_route: false,
            no_service: false,
            protocols: None,
        };
        Builtin { def, factory }
    }

    /// The plugin's own default `protocols` (Kong's schema overrides the plugin entity's default), for
    /// an entity that names none.
    pub fn protocols(mut self, default: &'static [&'static str]) -> Builtin {
        self.def.protocols = Some(default);
        self
    }

    /// Kong's `no_consumer`: the plugin cannot be scoped to a consumer (authentication plugins).
    pub fn no_consumer(mut self) -> Builtin {
        self.def.no_consumer = true;
        self
    }
}

/// A plugin entity's `config` (already validated, defaults filled) as the plugin's typed struct. Reads
/// the value in place: a large config compiles one instance per plugin entity, so no copy is made.
pub fn typed_config<T: serde::de::DeserializeOwned>(
    entity: &sluice_model::Plugin,
) -> Result<T, String> {
    serde::Deserialize::deserialize(&entity.config).map_err(|e| e.to_string())
}

/// A plugin entity that could not be instantiated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginBuildError {
    pub plugin_id: uuid::Uuid,
    pub name: String,
    pub message: String,
}

impl std::fmt::Display for PluginBuildError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "plugin '{}' ({}): {}",
            self.name, self.plugin_id, self.message
        )
    }
}

/// The plugin registry of this build.
pub struct Registry {
    builtins: Vec<Builtin>,
    state: Arc<PluginState>,
}

impl Registry {
    /// Every plugin implemented in [`crate::builtin`].
    pub fn builtin() -> Registry {
        Registry::with(crate::builtin::all())
    }

    /// Every plugin, for a node with a database whose counters `counters` are (DB mode): `rate-limiting`
    /// accepts `policy: cluster`.
    pub fn with_database(counters: Arc<dyn crate::counters::ClusterCounters>) -> Registry {
        let registry = Registry::with(crate::builtin::all_for(true));
        let _ = registry.state.cluster.set(counters);
        registry
    }

    /// A registry of the given plugins (tests use this with their own plugins).
    pub fn with(builtins: Vec<Builtin>) -> Registry {
        Registry {
            builtins,
            state: Arc::default(),
        }
    }

    /// The state shared across snapshots (rate-limit counters).
    pub fn state(&self) -> &Arc<PluginState> {
        &self.state
    }

    /// Instances, credentials and per-route chains for a validated config.
    pub fn compile(&self, config: &Config) -> Result<CompiledPlugins, Vec<PluginBuildError>> {
        CompiledPlugins::build(self, config)
    }

    pub(crate) fn builtin_named(&self, name: &str) -> Option<&Builtin> {
        self.builtins.iter().find(|b| b.def.name == name)
    }
}

impl PluginRegistry for Registry {
    fn plugin(&self, name: &str) -> Option<&PluginDef> {
        self.builtin_named(name).map(|b| &b.def)
    }

    fn names(&self) -> Vec<&'static str> {
        let mut names: Vec<_> = self.builtins.iter().map(|b| b.def.name).collect();
        names.sort_unstable();
        names
    }
}
