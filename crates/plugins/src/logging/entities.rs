//! Routes and services as JSON, serialized once per config snapshot (when the first logging plugin of the
//! snapshot is built) instead of once per logged request: they are the largest part of a log record and
//! they only change with the config. A request record's two members are also kept together per route,
//! with its own service (`,"route":{…},"service":{…}`), so that they cost one lookup and one copy.

use serde::Serialize;
use serde_json::value::RawValue;
use sluice_model::{Config, Route, Service};
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use uuid::Uuid;

/// Entities' JSON by id. FxHash: looking up two ids with std's SipHash cost a few hundred instructions of
/// every logged request, and the ids come from the config, not from clients.
type ById = HashMap<Uuid, Box<RawValue>, rustc_hash::FxBuildHasher>;

/// A route's and its service's members of a request record, with the service's id they were made for.
struct Pair {
    service: Uuid,
    members: Box<[u8]>,
}

/// The JSON of every route and service of one config, by id.
#[derive(Default)]
pub struct EntityJson {
    routes: ById,
    services: ById,
    /// By route id, for the routes that have a service.
    pairs: HashMap<Uuid, Pair, rustc_hash::FxBuildHasher>,
    /// Plugin instances of this config that queue the plain request record (see [`super::rendered`]).
    loggers: AtomicUsize,
}

impl EntityJson {
    /// Serializes the routes and services of `config` (entities that fail to serialize are left out and
    /// serialized per request instead).
    pub fn build(config: &Config) -> EntityJson {
        fn each<T: Serialize>(items: &[T], id: impl Fn(&T) -> Uuid) -> ById {
            items
                .iter()
                .filter_map(|item| Some((id(item), serde_json::value::to_raw_value(item).ok()?)))
                .collect()
        }
        let routes = each(&config.routes, |r: &Route| r.id);
        let services = each(&config.services, |s: &Service| s.id);
        let pairs = (config.routes.iter())
            .filter_map(|r| {
                let service = r.service.as_ref()?.id;
                let mut members = Vec::new();
                members_of(&mut members, routes.get(&r.id)?, services.get(&service)?);
                Some((
                    r.id,
                    Pair {
                        service,
                        members: members.into(),
                    },
                ))
            })
            .collect();
        EntityJson {
            routes,
            services,
            pairs,
            loggers: AtomicUsize::new(0),
        }
    }

    /// Counts a plugin instance that queues the plain request record (when it is built, before any
    /// request is logged with this config).
    pub(crate) fn count_logger(&self) {
        self.loggers.fetch_add(1, Ordering::Relaxed);
    }

    /// Whether several instances of this config queue the plain record, so that one rendering per
    /// request is worth sharing.
    pub(crate) fn has_several_loggers(&self) -> bool {
        self.loggers.load(Ordering::Relaxed) > 1
    }

    /// Appends the route's JSON (cached, or serialized now when it failed to serialize at build time).
    pub(crate) fn write_route(&self, out: &mut Vec<u8>, route: &Route) {
        write(out, self.routes.get(&route.id).map(|r| &**r), route);
    }

    pub(crate) fn write_service(&self, out: &mut Vec<u8>, service: &Service) {
        write(out, self.services.get(&service.id).map(|s| &**s), service);
    }

    /// Appends a request record's `,"route":…` and `,"service":…` members (each only when there is one):
    /// one copy when the service is the route's own, as it nearly always is.
    pub(crate) fn write_route_and_service(
        &self,
        out: &mut Vec<u8>,
        route: Option<&Route>,
        service: Option<&Service>,
    ) {
        if let (Some(route), Some(service)) = (route, service) {
            if let Some(pair) = self
                .pairs
                .get(&route.id)
                .filter(|p| p.service == service.id)
            {
                out.extend_from_slice(&pair.members);
                return;
            }
        }
        if let Some(route) = route {
            out.extend_from_slice(ROUTE_KEY);
            self.write_route(out, route);
        }
        if let Some(service) = service {
            out.extend_from_slice(SERVICE_KEY);
            self.write_service(out, service);
        }
    }
}

const ROUTE_KEY: &[u8] = b",\"route\":";
const SERVICE_KEY: &[u8] = b",\"service\":";

/// `,"route":<route>,"service":<service>`.
fn members_of(out: &mut Vec<u8>, route: &RawValue, service: &RawValue) {
    for (key, json) in [(ROUTE_KEY, route), (SERVICE_KEY, service)] {
        out.extend_from_slice(key);
        out.extend_from_slice(json.get().as_bytes());
    }
}

fn write<T: Serialize>(out: &mut Vec<u8>, cached: Option<&RawValue>, value: &T) {
    match cached {
        Some(raw) => out.extend_from_slice(raw.get().as_bytes()),
        // Serializing a model entity into a Vec cannot fail.
        None => {
            let _ = serde_json::to_writer(out, value);
        }
    }
}

#[cfg(test)]
mod tests;
