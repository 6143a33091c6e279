//! `GET /` (node information) and `GET /plugins/enabled`.

use crate::reply::{self, Reply};
use crate::Control;
use serde_json::{json, Map};

/// Kong's `GET /`: tagline, version, edition, hostname, node_id, plugins (available on this node with
/// version and priority; enabled = used by the live config), pids, configuration (secrets already redacted
/// by the node).
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
    reply::ok(&json!({
        "tagline": "Welcome to sluice",
        "version": info.version,
        "sluice_version": info.sluice_version,
        "edition": "community",
        "hostname": info.hostname,
        "node_id": info.node_id,
        "plugins": { "available_on_server": available, "enabled_in_cluster": enabled },
        // Every worker is a thread of this one process.
        "pids": { "master": std::process::id(), "workers": [std::process::id()] },
        // nginx's timers; Sluice's background work runs as the worker runtimes' tasks.
        "timers": control.tasks().map(|t| json!({ "running": t.alive, "pending": t.queued })),
        "configuration": info.configuration,
    }))
}

/// Kong's `GET /plugins/enabled`: the plugins this node can run (its `plugins` setting), sorted.
pub fn plugins_enabled(control: &dyn Control) -> Reply {
    let mut names: Vec<String> = control
        .node_info()
        .plugins_available
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    names.sort();
    reply::ok(&json!({ "enabled_plugins": names }))
}
