//! `GET /status`, `GET /status/ready` and `GET /metrics`, on the admin and status listeners.

use crate::errors::ApiError;
use crate::reply::{self, Reply};
use crate::Control;
use http::StatusCode;
use serde_json::json;

/// Kong's `configuration_hash` before any config is loaded.
const NO_HASH: &str = "00000000000000000000000000000000";

/// The Prometheus text exposition content type.
const METRICS_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The process's resident memory (`VmRSS` of `/proc/self/status`), in bytes: `GET /status`'s `rss_bytes`,
/// and the node's `kong_memory_workers_lua_vms_bytes` gauge.
pub fn resident_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let kb = status.lines().find_map(|l| l.strip_prefix("VmRSS:"))?;
    kb.trim()
        .trim_end_matches("kB")
        .trim()
        .parse::<u64>()
        .ok()
        .map(|kb| kb * 1024)
}

/// Kong's `GET /status`. `database` is there only on a node with a database that is not a data plane, as in
/// Kong (kong/api/routes/health.lua). `memory` has Kong's shape (kong/pdk/node.lua, in its default unit):
/// Sluice has no Lua VMs, so the one `workers_lua_vms` entry holds the process's resident memory;
/// `lua_shared_dicts` has proxy-cache's memory stores, Sluice's nearest to Kong's dictionaries;
/// `rss_bytes` is Sluice's own.
pub fn status(control: &dyn Control) -> Reply {
    let rss = resident_bytes();
    let mib = |bytes: usize| format!("{:.2} MiB", bytes as f64 / 1048576.0);
    let dicts: serde_json::Map<_, _> = (control.shared_dicts().into_iter())
        .map(|(name, held, bound)| {
            let dict = json!({ "allocated_slabs": mib(held), "capacity": mib(bound) });
            (name, dict)
        })
        .collect();
    let mut body = json!({
        "memory": {
            "workers_lua_vms": [{
                "pid": std::process::id(),
                "http_allocated_gc": mib(rss.unwrap_or(0) as usize),
            }],
            "lua_shared_dicts": dicts,
            "rss_bytes": rss,
        },
        "server": control.server_status(),
        "configuration_hash": control.config_hash().unwrap_or_else(|| NO_HASH.to_string()),
    });
    if control.db_mode() && !control.data_plane() {
        body["database"] = json!({ "reachable": control.database_reachable() });
    }
    reply::ok(&body)
}

/// Kong's `GET /timers` (the statistics of lua-resty-timer-ng, Kong's timer library), in its shape with
/// Sluice's nearest figures: the worker runtimes' tasks, which run Sluice's background work as timers run
/// Kong's. `sys.running` counts the tasks alive, `sys.pending` those queued to run now; per-timer statistics
/// and the flame graph are empty (tasks have no names or per-run timings).
pub fn timers(control: &dyn Control) -> Reply {
    let t = control.tasks().unwrap_or(crate::Tasks {
        alive: 0,
        queued: 0,
        workers: 0,
    });
    reply::ok(&json!({
        "worker": { "id": 0, "count": t.workers },
        "stats": {
            "sys": { "running": t.alive, "pending": t.queued, "waiting": 0, "total": t.alive },
            "timers": {},
            "flamegraph": { "running": "", "pending": "", "elapsed_time": "" },
        },
    }))
}

/// `GET /status/ready`: 200 once a config is live, else 503 with Kong's reason.
pub fn ready(control: &dyn Control) -> Reply {
    if control.is_ready() {
        return reply::message(StatusCode::OK, "ready");
    }
    let reason = match control.config_hash() {
        None => "no configuration available (configuration hash is not initialized)",
        Some(_) => "no configuration available (empty configuration present)",
    };
    reply::message(StatusCode::SERVICE_UNAVAILABLE, reason)
}

/// `GET /status/dns`: Kong answers with its DNS client's statistics only when `new_dns_client` is on; with
/// its default (off, the legacy client) it answers 501, and so does Sluice, whose resolver keeps no such
/// statistics (docs/differences.md).
pub fn dns() -> Reply {
    reply::message(
        StatusCode::NOT_IMPLEMENTED,
        "not implemented with the legacy DNS client",
    )
}

/// `GET /metrics`: the node's Prometheus exposition ([`Control::metrics`]); 404 when it has none.
pub fn metrics(control: &dyn Control) -> Result<Reply, ApiError> {
    let text = control.metrics().ok_or(ApiError::NotFound)?;
    Ok(reply::text(METRICS_TYPE, text))
}
