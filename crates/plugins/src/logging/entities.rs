//! Routes and services as JSON, serialized once per config snapshot (when the first logging plugin of the
//! snapshot is built) instead of once per logged request: they are the largest part of a log record and
//! they only change with the config.

use serde::Serialize;
use serde_json::value::RawValue;
use sluice_model::{Config, Route, Service};
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use uuid::Uuid;

/// Entities' JSON by id. FxHash: looking up two ids with std's SipHash cost a few hundred instructions of
/// every logged request, and the ids come from the config, not from clients.
type ById = HashMap<Uuid, Box<RawValue>, rustc_hash::FxBuildHasher>;

/// The JSON of every route and service of one config, by id.
#[derive(Default)]
pub struct EntityJson {
    routes: ById,
    services: ById,
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
        EntityJson {
            routes: each(&config.routes, |r: &Route| r.id),
            services: each(&config.services, |s: &Service| s.id),
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
