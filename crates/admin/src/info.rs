//! `GET /` (node information) and `GET /status`, on the admin and status listeners.

use crate::reply::{self, Reply};
use crate::Control;
use http::StatusCode;
use serde_json::{json, Map, Value};

/// Kong's configuration hash before any config is loaded.
const NO_HASH: &str = "00000000000000000000000000000000";

pub fn root(control: &dyn Control) -> Reply {
    let info = control.node_info();
    let mut available = Map::new();
    for (name, priority) in &info.plugins_available {
        available.insert(
            name.clone(),
            json!({ "version": info.version, "priority": priority }),
        );
    }
    let mut enabled: Vec<String> = control
        .config()
        .plugins
        .iter()
        .map(|p| p.name.clone())
        .collect();
    enabled.sort();
    enabled.dedup();
    reply::json(
        StatusCode::OK,
        &json!({
            "version": info.version,
            "hostname": info.hostname,
            "node_id": info.node_id,
            "tagline": "Welcome to sluice",
            "plugins": { "available_on_server": available, "enabled_in_cluster": enabled },
            "configuration": info.configuration,
        }),
    )
}

fn rss_bytes() -> Value {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(Value::Null, |kb| json!(kb * 1024))
}

pub fn status(control: &dyn Control) -> Reply {
    reply::json(
        StatusCode::OK,
        &json!({
            "database": { "reachable": true },
            "memory": { "rss_bytes": rss_bytes() },
            "server": control.server_status(),
            "configuration_hash": control.config_hash().unwrap_or_else(|| NO_HASH.to_string()),
        }),
    )
}

pub fn ready(control: &dyn Control) -> Reply {
    if control.is_ready() {
        reply::message(StatusCode::OK, "ready")
    } else {
        reply::message(
            StatusCode::SERVICE_UNAVAILABLE,
            "no configuration available (empty configuration present)",
        )
    }
}
