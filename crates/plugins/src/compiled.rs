//! The plugins of one snapshot: instances, credentials, and one chain per route with Kong's precedence
//! already resolved; for stream routes, the instances Kong's stream subsystem runs ([`streams`]).

mod streams;
#[cfg(test)]
mod tests;

use crate::chain::{ChainEntry, PluginChain, Slot};
use crate::plugin::Plugin;
use crate::protocols::Protocols;
use crate::registry::{BuildCtx, PluginBuildError, Registry};
use crate::Credentials;
use sluice_metrics::Flags;
use sluice_model::{Config, Route};
use sluice_router::stream::StreamProtocols;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
pub use streams::StreamRoutePlugins;
use uuid::Uuid;

/// Built once per config snapshot by [`Registry::compile`].
pub struct CompiledPlugins {
    credentials: Credentials,
    routes: Vec<PluginChain>,
    global: PluginChain,
    /// Per route: the metrics flags of the prometheus instance that applies (requests that matched no route
    /// are not counted, as in Kong).
    route_metrics: Vec<Option<Flags>>,
    /// What runs when a stream session ends.
    streams: streams::StreamPlugins,
}

struct Instance<'c> {
    entity: &'c sluice_model::Plugin,
    priority: i32,
    plugin: Arc<dyn Plugin>,
    protocols: Protocols,
    /// The stream protocols the instance lists (Kong loads it in the stream subsystem when not empty).
    stream: StreamProtocols,
}

impl Instance<'_> {
    fn slot(&self) -> Slot {
        Slot {
            plugin: self.plugin.clone(),
            protocols: self.protocols,
        }
    }
}

/// Kong's precedence rank (0 = most specific): route+service+consumer, route+consumer, service+consumer,
/// route+service, consumer, route, service, global.
fn rank(p: &sluice_model::Plugin) -> u8 {
    match (p.route.is_some(), p.service.is_some(), p.consumer.is_some()) {
        (true, true, true) => 0,
        (true, false, true) => 1,
        (false, true, true) => 2,
        (true, true, false) => 3,
        (false, false, true) => 4,
        (true, false, false) => 5,
        (false, true, false) => 6,
        (false, false, false) => 7,
    }
}

impl CompiledPlugins {
    pub(crate) fn build(
        registry: &Registry,
        config: &Config,
    ) -> Result<CompiledPlugins, Vec<PluginBuildError>> {
        let credentials = Credentials::build(config);
        let ctx = BuildCtx {
            config,
            credentials: &credentials,
            state: registry.state(),
            entity_json: Default::default(),
        };
        let mut errors = Vec::new();
        let mut instances = Vec::new();
        // As Kong, an instance is loaded in each subsystem (HTTP, stream) its protocols name one of.
        let http = |p: &sluice_model::Plugin| !Protocols::from_names(&p.protocols).is_empty();
        let stream =
            |p: &sluice_model::Plugin| !StreamProtocols::from_names(&p.protocols).is_empty();
        let loaded = |p: &&sluice_model::Plugin| p.enabled && (http(p) || stream(p));
        for entity in config.plugins.iter().filter(loaded) {
            let builtin = registry.builtin_named(&entity.name);
            if builtin.is_none() && !http(entity) {
                continue; // stream-only instances of plugins this build lacks run nowhere
            }
            let Some(builtin) = builtin else {
                errors.push(PluginBuildError {
                    plugin_id: entity.id,
                    name: entity.name.clone(),
                    message: "not implemented by this build".into(),
                });
                continue;
            };
            match (builtin.factory)(&ctx, entity) {
                Ok(plugin) => instances.push(Instance {
                    entity,
                    priority: builtin.def.priority,
                    plugin,
                    protocols: Protocols::from_names(&entity.protocols),
                    stream: StreamProtocols::from_names(&entity.protocols),
                }),
                Err(message) => errors.push(PluginBuildError {
                    plugin_id: entity.id,
                    name: entity.name.clone(),
                    message,
                }),
            }
        }
        if !errors.is_empty() {
            return Err(errors);
        }
        let streams = streams::StreamPlugins::build(config, &instances);
        let (metered, chained): (Vec<Instance<'_>>, Vec<Instance<'_>>) = instances
            .into_iter()
            .filter(|i| !i.protocols.is_empty())
            .partition(|i| i.plugin.metrics_flags().is_some());
        let index = ScopeIndex::new(&chained);
        // No instance chains (a large config without plugins): no per-route list at all, as every
        // route's chain is then the global one, empty ([`Self::route_chain`]). A DB-mode node compiles
        // this on each write, and drops the old snapshot's: 10,000 empty chains made and freed per write.
        let routes = match chained.is_empty() {
            true => Vec::new(),
            false => (config.routes.iter())
                .map(|r| chain_for(index.candidates(Some(r)), Some(r)))
                .collect(),
        };
        let global = chain_for(index.candidates(None), None);
        let metered_index = ScopeIndex::new(&metered);
        // (Likewise no per-route flags when nothing is metered: [`Self::route_metrics`] answers None.)
        let route_metrics = match metered.is_empty() {
            true => Vec::new(),
            false => config
                .routes
                .iter()
                .map(|r| most_specific_flags(metered_index.candidates(Some(r)), Some(r)))
                .collect(),
        };
        Ok(CompiledPlugins {
            credentials,
            routes,
            global,
            route_metrics,
            streams,
        })
    }

    /// What runs when a session of stream route `config.routes[route_index]` ends (None: a session that
    /// matched no route).
    pub fn stream(&self, route_index: Option<usize>) -> &streams::StreamRoutePlugins {
        self.streams.of(route_index)
    }

    /// The chain of `config.routes[route_index]`: the global chain for an index past the per-route list
    /// (which is empty when no instance chains, the global chain then being empty too).
    pub fn route_chain(&self, route_index: usize) -> &PluginChain {
        self.routes.get(route_index).unwrap_or(&self.global)
    }

    /// The prometheus flags for requests of `config.routes[route_index]` (None: not metered).
    pub fn route_metrics(&self, route_index: usize) -> Option<Flags> {
        self.route_metrics.get(route_index).copied().flatten()
    }

    /// Global plugins only: for requests that matched no route.
    pub fn global_chain(&self) -> &PluginChain {
        &self.global
    }

    /// The global chain, when some global instance has a `rewrite` handler: the driver runs its rewrite
    /// phase before routing (None, the usual case, costs one branch per request).
    pub fn rewrite_chain(&self) -> Option<&PluginChain> {
        self.global.has_rewrite().then_some(&self.global)
    }

    pub fn credentials(&self) -> &Credentials {
        &self.credentials
    }

    /// An empty set, for the snapshot that exists before any config is loaded.
    pub fn empty() -> CompiledPlugins {
        CompiledPlugins {
            credentials: Credentials::default(),
            routes: Vec::new(),
            global: PluginChain::default(),
            route_metrics: Vec::new(),
            streams: streams::StreamPlugins::default(),
        }
    }
}

/// The chain for one route (None: global plugins only).
/// Instances grouped by the scope that selects them, so each route's chain only looks at instances that can apply
/// to it: compiling stays linear in routes + plugins (10k routes × 20k plugins was 1.3 s when every route scanned
/// every plugin).
struct ScopeIndex<'i, 'c> {
    by_route: HashMap<Uuid, Vec<&'i Instance<'c>>>,
    /// Scoped to a service but not to a route.
    by_service: HashMap<Uuid, Vec<&'i Instance<'c>>>,
    /// Scoped to neither (global, or consumer only).
    unscoped: Vec<&'i Instance<'c>>,
}

impl<'i, 'c> ScopeIndex<'i, 'c> {
    fn new(instances: &'i [Instance<'c>]) -> Self {
        let mut index = ScopeIndex {
            by_route: HashMap::new(),
            by_service: HashMap::new(),
            unscoped: Vec::new(),
        };
        for inst in instances {
            match (inst.entity.route, inst.entity.service) {
                (Some(r), _) => index.by_route.entry(r.id).or_default().push(inst),
                (None, Some(s)) => index.by_service.entry(s.id).or_default().push(inst),
                (None, None) => index.unscoped.push(inst),
            }
        }
        index
    }

    /// Every instance that may apply to `route` (None: requests that matched no route), in config order.
    fn candidates(&self, route: Option<&Route>) -> Vec<&'i Instance<'c>> {
        let mut out: Vec<&'i Instance<'c>> = Vec::new();
        // (No scoped instance at all, the usual case on a large config: no lookups per route.)
        let scoped = !self.by_route.is_empty() || !self.by_service.is_empty();
        if let Some(r) = route.filter(|_| scoped) {
            out.extend(self.by_route.get(&r.id).into_iter().flatten());
            if let Some(s) = r.service {
                out.extend(self.by_service.get(&s.id).into_iter().flatten());
            }
        }
        out.extend(self.unscoped.iter());
        out
    }
}

/// The flags of the most specific consumer-less instance that applies to `route` (Kong's precedence).
fn most_specific_flags(instances: Vec<&Instance<'_>>, route: Option<&Route>) -> Option<Flags> {
    instances
        .into_iter()
        .filter(|i| i.entity.consumer.is_none() && applies_to(i.entity, route))
        .min_by_key(|i| rank(i.entity))
        .and_then(|i| i.plugin.metrics_flags())
}

/// Whether an instance's route/service scope covers `route` (None: requests that matched no route).
fn applies_to(p: &sluice_model::Plugin, route: Option<&Route>) -> bool {
    let route_id = route.map(|r| r.id);
    let service_id = route.and_then(|r| r.service.map(|s| s.id));
    p.route.is_none_or(|r| Some(r.id) == route_id)
        && p.service.is_none_or(|s| Some(s.id) == service_id)
}

fn chain_for(instances: Vec<&Instance<'_>>, route: Option<&Route>) -> PluginChain {
    // Most routes of a large config have no plugin: no map, no pass.
    if instances.is_empty() {
        return PluginChain::new(Vec::new());
    }
    let applies = |p: &sluice_model::Plugin| applies_to(p, route);
    let mut by_name: BTreeMap<(i32, &str), Vec<&Instance<'_>>> = BTreeMap::new();
    for inst in instances.into_iter().filter(|i| applies(i.entity)) {
        by_name
            .entry((-inst.priority, inst.entity.name.as_str()))
            .or_default()
            .push(inst);
    }
    let mut entries = Vec::new();
    for ((neg_priority, _), candidates) in by_name {
        let default = candidates
            .iter()
            .filter(|i| i.entity.consumer.is_none())
            .min_by_key(|i| rank(i.entity));
        let default_rank = default.map_or(u8::MAX, |d| rank(d.entity));
        let mut by_consumer: HashMap<Uuid, Slot> = HashMap::new();
        let mut best: HashMap<Uuid, (u8, &Instance<'_>)> = HashMap::new();
        for inst in candidates.iter().filter(|i| i.entity.consumer.is_some()) {
            let consumer = inst.entity.consumer.map(|c| c.id).unwrap_or_default();
            let r = rank(inst.entity);
            if r < default_rank && best.get(&consumer).is_none_or(|(b, _)| r < *b) {
                best.insert(consumer, (r, inst));
            }
        }
        for (consumer, (_, inst)) in best {
            by_consumer.insert(consumer, inst.slot());
        }
        let global_only = default.is_some_and(|d| rank(d.entity) == 7);
        entries.push(ChainEntry {
            priority: -neg_priority,
            default: default.map(|d| d.slot()),
            by_consumer,
            global: global_only,
        });
    }
    PluginChain::new(entries)
}
