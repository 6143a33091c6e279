//! Entity reads: collections, items by id or endpoint key, nested collections. Writes are refused (DB-less).

use crate::page::ListQuery;
use crate::reply::{self, Reply};
use http::{Method, StatusCode};
use serde_json::Value;
use sluice_model::Config;

/// One Admin API collection: its path name and how to read it from the config.
struct Collection {
    name: &'static str,
    /// Fields that identify an item besides its id (Kong's endpoint key).
    keys: &'static [&'static str],
    items: fn(&Config) -> Vec<Value>,
}

fn values<T: serde::Serialize>(items: &[T]) -> Vec<Value> {
    items
        .iter()
        .filter_map(|i| serde_json::to_value(i).ok())
        .collect()
}

const COLLECTIONS: &[Collection] = &[
    Collection {
        name: "services",
        keys: &["name"],
        items: |c| values(&c.services),
    },
    Collection {
        name: "routes",
        keys: &["name"],
        items: |c| values(&c.routes),
    },
    Collection {
        name: "upstreams",
        keys: &["name"],
        items: |c| values(&c.upstreams),
    },
    Collection {
        name: "targets",
        keys: &["target"],
        items: |c| values(&c.targets),
    },
    Collection {
        name: "consumers",
        keys: &["username", "custom_id"],
        items: |c| values(&c.consumers),
    },
    Collection {
        name: "plugins",
        keys: &["instance_name"],
        items: |c| values(&c.plugins),
    },
    Collection {
        name: "certificates",
        keys: &[],
        items: |c| values(&c.certificates),
    },
    Collection {
        name: "snis",
        keys: &["name"],
        items: |c| values(&c.snis),
    },
    Collection {
        name: "ca_certificates",
        keys: &[],
        items: |c| values(&c.ca_certificates),
    },
    Collection {
        name: "key-auths",
        keys: &["key"],
        items: |c| values(&c.keyauth_credentials),
    },
    Collection {
        name: "basic-auths",
        keys: &["username"],
        items: |c| values(&c.basicauth_credentials),
    },
    Collection {
        name: "acls",
        keys: &[],
        items: |c| values(&c.acls),
    },
];

/// Nested collections: (parent collection, child path, child collection, foreign-key field).
const NESTED: &[(&str, &str, &str, &str)] = &[
    ("services", "routes", "routes", "service"),
    ("services", "plugins", "plugins", "service"),
    ("routes", "plugins", "plugins", "route"),
    ("consumers", "plugins", "plugins", "consumer"),
    ("consumers", "key-auth", "key-auths", "consumer"),
    ("consumers", "basic-auth", "basic-auths", "consumer"),
    ("consumers", "acls", "acls", "consumer"),
    ("upstreams", "targets", "targets", "upstream"),
    ("certificates", "snis", "snis", "certificate"),
];

fn collection(name: &str) -> Option<&'static Collection> {
    COLLECTIONS.iter().find(|c| c.name == name)
}

fn find(items: &[Value], keys: &[&str], needle: &str) -> Option<Value> {
    items
        .iter()
        .find(|i| i["id"] == needle)
        .or_else(|| items.iter().find(|i| keys.iter().any(|k| i[*k] == needle)))
        .cloned()
}

/// Handles `/{collection}[/{item}[/{child}]]`; None when the path is not an entity path.
pub fn handle(
    method: &Method,
    segments: &[&str],
    query: Option<&str>,
    path: &str,
    config: &Config,
) -> Option<Reply> {
    let coll = collection(segments.first()?)?;
    if *method != Method::GET && *method != Method::HEAD {
        let target = match segments {
            [_, _, child] => NESTED
                .iter()
                .find(|(p, c, _, _)| *p == coll.name && c == child)
                .map_or(coll.name, |(_, _, real, _)| real),
            _ => coll.name,
        };
        return Some(reply::dbless_write(method, target));
    }
    let items = (coll.items)(config);
    match segments {
        [_] => Some(list(path, query, items)),
        [_, key] if coll.name == "plugins" && *key == "enabled" => {
            let mut names: Vec<String> = config.plugins.iter().map(|p| p.name.clone()).collect();
            names.sort();
            names.dedup();
            Some(reply::json(
                StatusCode::OK,
                &serde_json::json!({ "enabled_plugins": names }),
            ))
        }
        [_, key] => Some(
            find(&items, coll.keys, key)
                .map_or_else(reply::not_found, |v| reply::json(StatusCode::OK, &v)),
        ),
        [_, key, child] => {
            let Some(parent) = find(&items, coll.keys, key) else {
                return Some(reply::not_found());
            };
            if coll.name == "routes" && *child == "service" {
                let Some(id) = parent["service"]["id"].as_str() else {
                    return Some(reply::not_found());
                };
                let services = values(&config.services);
                return Some(
                    find(&services, &[], id)
                        .map_or_else(reply::not_found, |v| reply::json(StatusCode::OK, &v)),
                );
            }
            let (_, _, real, field) = NESTED
                .iter()
                .find(|(p, c, _, _)| *p == coll.name && c == child)?;
            let children: Vec<Value> = collection(real)
                .map(|c| (c.items)(config))
                .unwrap_or_default();
            let mine: Vec<Value> = children
                .into_iter()
                .filter(|c| c[*field]["id"] == parent["id"])
                .collect();
            Some(list(path, query, mine))
        }
        [_, key, child, item] => {
            let Some(parent) = find(&items, coll.keys, key) else {
                return Some(reply::not_found());
            };
            let (_, _, real, field) = NESTED
                .iter()
                .find(|(p, c, _, _)| *p == coll.name && c == child)?;
            let children: Vec<Value> = collection(real)
                .map(|c| (c.items)(config))
                .unwrap_or_default();
            let mine: Vec<Value> = children
                .into_iter()
                .filter(|c| c[*field]["id"] == parent["id"])
                .collect();
            let keys = collection(real).map_or(&[][..], |c| c.keys);
            Some(
                find(&mine, keys, item)
                    .map_or_else(reply::not_found, |v| reply::json(StatusCode::OK, &v)),
            )
        }
        _ => None,
    }
}

fn list(path: &str, query: Option<&str>, items: Vec<Value>) -> Reply {
    match ListQuery::parse(path, query) {
        Ok(q) => reply::json(StatusCode::OK, &q.page(items)),
        Err(r) => r,
    }
}
