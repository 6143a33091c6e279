//! Path matching: request path segments → the [`Endpoint`] that serves them. Pure, no I/O.
//!
//! Kong's paths: `/`, `/status`, `/config`, `/{collection}[/{key}]`, nested collections
//! `/{parent}/{key}/{child}[/{key}]` (see [`catalog::RELATIONS`]), owner lookups like `/routes/{r}/service`,
//! `/upstreams/{u}/targets/all`, `/upstreams/{u}/health`, `/upstreams/{u}/targets/{t}/healthy|unhealthy`,
//! `/plugins/enabled`, `/tags[/{tag}]`, `/metrics`, `/status/dns`, proxy-cache's `/proxy-cache[...]`. The status
//! listener serves only `/status`, `/status/ready`, `/status/dns` and `/metrics`.

use crate::catalog::{self, Collection, Relation};
use http::Method;

/// Which listener a request arrived on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Listener {
    Admin,
    Status,
}

/// The entities a list or item path addresses: a collection, optionally under a parent entity.
#[derive(Clone, Copy)]
pub struct Scope<'a> {
    pub coll: &'static Collection,
    pub parent: Option<Parent<'a>>,
}

/// The parent of a nested path: `/services/{key}/routes` has parent `services` / `key`.
#[derive(Clone, Copy)]
pub struct Parent<'a> {
    pub coll: &'static Collection,
    pub key: &'a str,
    pub relation: &'static Relation,
}

/// What a path addresses.
#[derive(Clone, Copy)]
pub enum Endpoint<'a> {
    /// `GET /`: node information.
    Root,
    /// `GET /status`.
    Status,
    /// `GET /status/ready` (status listener).
    Ready,
    /// `GET /status/dns` (both listeners): the DNS client's statistics.
    Dns,
    /// `GET /metrics` (both listeners, as with Kong's prometheus plugin).
    Metrics,
    /// `GET|POST /config`.
    Config,
    /// `GET /plugins/enabled`: the plugins this node implements.
    PluginsEnabled,
    /// `GET /endpoints`: every path served.
    Endpoints,
    /// `GET /timers`: the worker runtimes' tasks, in the shape of Kong's timer statistics.
    Timers,
    /// `GET /schemas/{entity}`.
    Schema(&'a str),
    /// `GET /schemas/plugins/{name}`.
    PluginSchema(&'a str),
    /// `POST /schemas/{entity}/validate` (`plugins` for `/schemas/plugins/validate`).
    Validate(&'a str),
    /// `GET /tags` or `GET /tags/{tag}`.
    Tags(Option<&'a str>),
    /// A collection, top-level or nested.
    List(Scope<'a>),
    /// One entity by id or endpoint key, top-level or nested.
    Item(Scope<'a>, &'a str),
    /// `GET /upstreams/{u}/health`.
    UpstreamHealth(&'a str),
    /// `POST /upstreams/{u}/targets/{t}/healthy` (true) or `.../unhealthy` (false).
    SetTargetHealth(&'a str, &'a str, bool),
    /// The entity a foreign key points at: `/routes/{key}/service` (child collection, child key, relation).
    Owner(&'static Collection, &'a str, &'static Relation),
    /// proxy-cache's `/proxy-cache` (purge all), `/proxy-cache/{key}` and
    /// `/proxy-cache/{plugin}/caches/{key}`: (plugin, key).
    ProxyCache(Option<&'a str>, Option<&'a str>),
    /// The oauth2 plugin's tokens: `/oauth2_tokens` and `/oauth2_tokens/{id or access_token}`.
    OAuth2Tokens(Option<&'a str>),
    /// `GET /clustering/data-planes` (a control plane's data planes).
    DataPlanes,
    /// `GET /clustering/status` (Kong's deprecated form of the same).
    ClusteringStatus,
}

/// Methods of read-only endpoints.
const READ: &[Method] = &[Method::GET, Method::HEAD, Method::OPTIONS];
/// Methods of collections (POST is answered, with DB-less' refusal).
const COLLECTION: &[Method] = &[Method::GET, Method::HEAD, Method::POST, Method::OPTIONS];
/// Methods of single entities (writes are answered, with DB-less' refusal).
const ENTITY: &[Method] = &[
    Method::GET,
    Method::HEAD,
    Method::PUT,
    Method::PATCH,
    Method::DELETE,
    Method::OPTIONS,
];

/// Methods of actions (`/schemas/.../validate`).
const ACTION: &[Method] = &[Method::POST, Method::OPTIONS];
/// Methods of the target health actions (Kong 3 documents `PUT`; older clients `POST`).
const HEALTH_ACTION: &[Method] = &[Method::POST, Method::PUT, Method::OPTIONS];

/// Methods of `/proxy-cache` (purge all) and of one cached object.
const CACHE_PURGE: &[Method] = &[Method::DELETE, Method::OPTIONS];
const CACHE_ENTRY: &[Method] = &[Method::GET, Method::HEAD, Method::DELETE, Method::OPTIONS];

/// Collections Kong does not serve at the top level (`/targets` lives under `/upstreams/{u}`).
const NESTED_ONLY: &[&str] = &["targets"];

impl Endpoint<'_> {
    /// The methods this endpoint answers (for `Allow` and 405).
    pub fn methods(&self) -> &'static [Method] {
        match self {
            Endpoint::Config | Endpoint::List(_) => COLLECTION,
            Endpoint::Item(..) | Endpoint::Owner(..) => ENTITY,
            Endpoint::SetTargetHealth(..) => HEALTH_ACTION,
            Endpoint::Validate(_) => ACTION,
            Endpoint::ProxyCache(_, None) => CACHE_PURGE,
            Endpoint::ProxyCache(_, Some(_)) => CACHE_ENTRY,
            Endpoint::OAuth2Tokens(Some(_)) => CACHE_ENTRY,
            _ => READ,
        }
    }
}

/// Splits a path into its non-empty segments (`/services/` and `/services` are the same path).
pub fn segments(path: &str) -> Vec<&str> {
    path.split('/').filter(|s| !s.is_empty()).collect()
}

/// The endpoint at `segments` on `listener`, or None for an unknown path (404).
pub fn route<'a>(listener: Listener, segments: &[&'a str]) -> Option<Endpoint<'a>> {
    if listener == Listener::Status {
        return match segments {
            ["status"] => Some(Endpoint::Status),
            ["status", "ready"] => Some(Endpoint::Ready),
            ["status", "dns"] => Some(Endpoint::Dns),
            ["metrics"] => Some(Endpoint::Metrics),
            _ => None,
        };
    }
    match segments {
        [] => Some(Endpoint::Root),
        ["status"] => Some(Endpoint::Status),
        ["status", "dns"] => Some(Endpoint::Dns),
        ["metrics"] => Some(Endpoint::Metrics),
        ["config"] => Some(Endpoint::Config),
        ["plugins", "enabled"] => Some(Endpoint::PluginsEnabled),
        ["endpoints"] => Some(Endpoint::Endpoints),
        ["timers"] => Some(Endpoint::Timers),
        ["schemas", "plugins", "validate"] => Some(Endpoint::Validate("plugins")),
        ["schemas", "plugins", name] => Some(Endpoint::PluginSchema(name)),
        ["schemas", entity, "validate"] => Some(Endpoint::Validate(entity)),
        ["schemas", entity] => Some(Endpoint::Schema(entity)),
        ["tags"] => Some(Endpoint::Tags(None)),
        ["tags", tag] => Some(Endpoint::Tags(Some(tag))),
        ["clustering", "data-planes"] => Some(Endpoint::DataPlanes),
        ["clustering", "status"] => Some(Endpoint::ClusteringStatus),
        ["proxy-cache"] => Some(Endpoint::ProxyCache(None, None)),
        ["proxy-cache", key] => Some(Endpoint::ProxyCache(None, Some(key))),
        ["proxy-cache", plugin, "caches", key] => {
            Some(Endpoint::ProxyCache(Some(plugin), Some(key)))
        }
        ["oauth2_tokens"] => Some(Endpoint::OAuth2Tokens(None)),
        ["oauth2_tokens", key] => Some(Endpoint::OAuth2Tokens(Some(key))),
        [coll] => Some(Endpoint::List(top_level(coll)?)),
        [coll, key] => Some(Endpoint::Item(top_level(coll)?, key)),
        ["upstreams", key, "health"] => Some(Endpoint::UpstreamHealth(key)),
        ["upstreams", u, "targets", t, action @ ("healthy" | "unhealthy")] => {
            Some(Endpoint::SetTargetHealth(u, t, *action == "healthy"))
        }
        [coll, key, child] => match nested(coll, key, child) {
            Some(scope) => Some(Endpoint::List(scope)),
            None => owner(coll, key, child),
        },
        ["upstreams", key, "targets", "all"] => {
            Some(Endpoint::List(nested("upstreams", key, "targets")?))
        }
        [coll, key, child, item] => Some(Endpoint::Item(nested(coll, key, child)?, item)),
        _ => None,
    }
}

fn top_level(path: &str) -> Option<Scope<'static>> {
    if NESTED_ONLY.contains(&path) {
        return None;
    }
    Some(Scope {
        coll: catalog::collection(path)?,
        parent: None,
    })
}

fn nested<'a>(parent: &str, key: &'a str, segment: &str) -> Option<Scope<'a>> {
    let relation = catalog::relation(parent, segment)?;
    Some(Scope {
        coll: catalog::collection(relation.child)?,
        parent: Some(Parent {
            coll: catalog::collection(relation.parent)?,
            key,
            relation,
        }),
    })
}

/// `/{child}/{key}/{field}`: the entity that the child's foreign key `field` points at.
fn owner<'a>(child: &str, key: &'a str, field: &str) -> Option<Endpoint<'a>> {
    if NESTED_ONLY.contains(&child) {
        return None;
    }
    let relation = catalog::RELATIONS
        .iter()
        .find(|r| r.child == child && r.field == field)?;
    Some(Endpoint::Owner(catalog::collection(child)?, key, relation))
}

#[cfg(test)]
mod tests;
