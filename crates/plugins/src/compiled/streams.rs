//! Which plugin instances run when a stream session ends, per stream route, resolved when the snapshot is
//! compiled: Kong's stream subsystem loads the instances whose `protocols` name a stream protocol; per
//! plugin name the most specific one that covers the route applies (route and service, route, service,
//! global: a stream has no consumer), and at the session's end it runs only if it lists the session's
//! protocol. Those with a `stream_log` handler make the route's [`StreamChain`]; prometheus (served by the
//! proxy itself) gives the route's metrics flags.

use super::{applies_to, rank, Instance, ScopeIndex};
use crate::stream::{StreamChain, StreamSlot};
use sluice_metrics::Flags;
use sluice_model::{Config, Route};
use sluice_router::stream::StreamProtocols;
use std::collections::{BTreeMap, HashMap};

/// What runs when a session of one stream route (or an unrouted one) ends.
#[derive(Default)]
pub struct StreamRoutePlugins {
    /// The `log` handlers, highest priority first.
    pub log: StreamChain,
    /// The prometheus instance that applies: the stream protocols it lists and its flags.
    pub metrics: Option<(StreamProtocols, Flags)>,
}

/// The stream plugins of a snapshot.
#[derive(Default)]
pub(super) struct StreamPlugins {
    /// By index into `config.routes`; only stream routes, and only when some instance is loaded.
    routes: HashMap<usize, StreamRoutePlugins>,
    unrouted: StreamRoutePlugins,
}

impl StreamPlugins {
    /// Nothing at all (no lookup per route) when no instance is loaded in the stream subsystem.
    pub(super) fn build(config: &Config, instances: &[Instance<'_>]) -> StreamPlugins {
        let runs = |i: &Instance<'_>| {
            !i.stream.is_empty()
                && (i.plugin.has_stream_log() || i.plugin.metrics_flags().is_some())
        };
        if !instances.iter().any(runs) {
            return StreamPlugins::default();
        }
        let index = ScopeIndex::new(instances);
        let resolve = |route: Option<&Route>| {
            let candidates = index.candidates(route).into_iter().filter(|i| runs(i));
            for_route(candidates, route)
        };
        let routes = config
            .routes
            .iter()
            .enumerate()
            .filter(|(_, r)| !StreamProtocols::from_names(&r.protocols).is_empty())
            .map(|(i, r)| (i, resolve(Some(r))))
            .collect();
        StreamPlugins {
            routes,
            unrouted: resolve(None),
        }
    }

    /// A route's plugins (nothing for a route without any), or the unrouted sessions' for None.
    pub(super) fn of(&self, route: Option<usize>) -> &StreamRoutePlugins {
        static NONE: StreamRoutePlugins = StreamRoutePlugins {
            log: StreamChain { slots: Vec::new() },
            metrics: None,
        };
        match route {
            Some(i) => self.routes.get(&i).unwrap_or(&NONE),
            None => &self.unrouted,
        }
    }
}

/// The most specific consumer-less instance per plugin name that covers `route`, in PRIORITY order.
fn for_route<'i, 'c: 'i>(
    candidates: impl Iterator<Item = &'i Instance<'c>>,
    route: Option<&Route>,
) -> StreamRoutePlugins {
    let mut best: BTreeMap<(i32, &str), &Instance<'_>> = BTreeMap::new();
    for inst in candidates.filter(|i| i.entity.consumer.is_none() && applies_to(i.entity, route)) {
        let key = (-inst.priority, inst.entity.name.as_str());
        if best
            .get(&key)
            .is_none_or(|b| rank(inst.entity) < rank(b.entity))
        {
            best.insert(key, inst);
        }
    }
    let mut out = StreamRoutePlugins::default();
    for inst in best.into_values() {
        match inst.plugin.metrics_flags() {
            Some(flags) => out.metrics = Some((inst.stream, flags)),
            None => out.log.slots.push(StreamSlot {
                plugin: inst.plugin.clone(),
                protocols: inst.stream,
            }),
        }
    }
    out
}

#[cfg(test)]
mod tests;
