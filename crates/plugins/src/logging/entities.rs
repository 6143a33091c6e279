//! Routes and services as JSON, serialized once per config snapshot (when the first logging plugin of the
//! snapshot is built) instead of once per logged request: they are the largest part of a log record and
//! they only change with the config.

use serde::{Serialize, Serializer};
use serde_json::value::RawValue;
use sluice_model::{Config, Route, Service};
use std::collections::HashMap;
use uuid::Uuid;

/// The JSON of every route and service of one config, by id.
#[derive(Default)]
pub struct EntityJson {
    routes: HashMap<Uuid, Box<RawValue>>,
    services: HashMap<Uuid, Box<RawValue>>,
}

impl EntityJson {
    /// Serializes the routes and services of `config` (entities that fail to serialize are left out and
    /// serialized per request instead).
    pub fn build(config: &Config) -> EntityJson {
        fn each<T: Serialize>(
            items: &[T],
            id: impl Fn(&T) -> Uuid,
        ) -> HashMap<Uuid, Box<RawValue>> {
            items
                .iter()
                .filter_map(|item| Some((id(item), serde_json::value::to_raw_value(item).ok()?)))
                .collect()
        }
        EntityJson {
            routes: each(&config.routes, |r: &Route| r.id),
            services: each(&config.services, |s: &Service| s.id),
        }
    }

    pub(crate) fn route<'a>(&'a self, route: &'a Route) -> Json<'a, Route> {
        self.routes
            .get(&route.id)
            .map_or(Json::Typed(route), |raw| Json::Raw(raw))
    }

    pub(crate) fn service<'a>(&'a self, service: &'a Service) -> Json<'a, Service> {
        self.services
            .get(&service.id)
            .map_or(Json::Typed(service), |raw| Json::Raw(raw))
    }
}

/// An entity as its cached JSON, or serialized now when there is none.
pub(crate) enum Json<'a, T> {
    Raw(&'a RawValue),
    Typed(&'a T),
}

impl<T: Serialize> Serialize for Json<'_, T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Json::Raw(raw) => raw.serialize(s),
            Json::Typed(value) => value.serialize(s),
        }
    }
}
