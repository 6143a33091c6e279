//! proxy-cache's Admin API side, called by the node's `Control` for Kong's `/proxy-cache` endpoints: finds
//! the stores of the proxy-cache plugins of the live config and reads or purges them. Stores are per
//! node: unlike Kong, a purge is not broadcast to the other nodes of a cluster.

use super::store::{Entry, MemoryStore};
use crate::state::PluginState;
use serde_json::{json, Map, Value};
use sluice_model::Config;
use std::sync::Arc;

/// The stores of the proxy-cache plugins of `config` (only `plugin`'s when given; none when `plugin` is
/// not a proxy-cache plugin of it). Stores no request has used yet are left out.
fn stores(
    state: &PluginState,
    config: &Config,
    plugin: Option<uuid::Uuid>,
) -> Vec<Arc<MemoryStore>> {
    let mut out: Vec<Arc<MemoryStore>> = Vec::new();
    for p in &config.plugins {
        if p.name != "proxy-cache" || plugin.is_some_and(|id| id != p.id) {
            continue;
        }
        let name = p.config["memory"]["dictionary_name"]
            .as_str()
            .unwrap_or("kong_db_cache");
        if let Some(store) = state.proxy_caches().get(name) {
            if !out.iter().any(|s| Arc::ptr_eq(s, &store)) {
                out.push(store);
            }
        }
    }
    out
}

/// An entry as Kong's Admin API shows the cached object.
fn to_json(e: &Entry) -> Value {
    let mut headers = Map::new();
    for name in e.headers.keys() {
        let values: Vec<Value> = e
            .headers
            .get_all(name)
            .iter()
            .map(|v| Value::from(String::from_utf8_lossy(v.as_bytes())))
            .collect();
        let value = match values.len() {
            1 => values.into_iter().next().unwrap_or(Value::Null),
            _ => Value::Array(values),
        };
        headers.insert(name.as_str().to_string(), value);
    }
    json!({
        "status": e.status.as_u16(),
        "headers": headers,
        "body": String::from_utf8_lossy(&e.body),
        "body_len": e.body.len(),
        "timestamp": e.timestamp,
        "ttl": e.ttl,
        "version": 1,
    })
}

fn now_ms() -> u64 {
    super::millis(std::time::SystemTime::now())
}

/// `GET /proxy-cache/{key}` (`plugin` None) and `GET /proxy-cache/{plugin}/caches/{key}`: the cached
/// object, or None (404).
pub fn lookup(
    state: &PluginState,
    config: &Config,
    plugin: Option<uuid::Uuid>,
    key: &str,
) -> Option<Value> {
    stores(state, config, plugin)
        .iter()
        .find_map(|s| s.find_hex(key, now_ms()))
        .map(|(_, e)| to_json(&e))
}

/// `DELETE /proxy-cache/{key}` and `DELETE /proxy-cache/{plugin}/caches/{key}`: true when a live entry was
/// there (204), false otherwise (404).
pub fn purge(state: &PluginState, config: &Config, plugin: Option<uuid::Uuid>, key: &str) -> bool {
    stores(state, config, plugin)
        .iter()
        .find_map(|s| Some((s, s.find_hex(key, now_ms())?.0)))
        .is_some_and(|(s, text)| s.purge(&text))
}

/// `DELETE /proxy-cache`: every proxy-cache plugin's store is emptied.
pub fn purge_all(state: &PluginState, config: &Config) {
    for store in stores(state, config, None) {
        store.flush();
    }
}
