//! `GET /metrics` of the node (status and admin listeners): Kong's node-level families, the per-request
//! families the prometheus plugin asks for, and Sluice's own (config loads, snapshot compile time, upstream
//! connection reuse). Rendered only when scraped.

use crate::control::NodeControl;
use sluice_metrics::kong::{escape, family};
use std::fmt::Write;
use std::sync::atomic::Ordering;

/// The whole exposition, in the Prometheus text format (version 0.0.4).
pub fn render(node: &NodeControl) -> String {
    let mut out = String::with_capacity(4096);
    let node_id = node.node_id.to_string();
    family(
        &mut out,
        "kong_datastore_reachable",
        "gauge",
        "Datastore reachable from Kong, 0 is unreachable",
    );
    // DB-less: the store is local and the live config is in memory.
    let _ = writeln!(out, "kong_datastore_reachable 1");
    family(
        &mut out,
        "kong_node_info",
        "gauge",
        "Kong Node metadata information",
    );
    // Kong's `kong.version`: the version `GET /` reports too.
    let _ = writeln!(
        out,
        "kong_node_info{{node_id=\"{node_id}\",version=\"{}\"}} 1",
        escape(crate::KONG_VERSION)
    );
    if let Some(stats) = node.proxy_stats.get() {
        family(
            &mut out,
            "kong_nginx_connections_total",
            "gauge",
            "Number of connections by subsystem",
        );
        let states = stats.connection_states();
        for (state, n) in [
            ("accepted", stats.accepted_connections()),
            ("handled", stats.accepted_connections()),
            ("total", stats.total_requests()),
            ("active", states.active),
            ("reading", states.reading),
            ("writing", states.writing),
            ("waiting", states.waiting),
        ] {
            let _ = writeln!(
                out,
                "kong_nginx_connections_total{{node_id=\"{node_id}\",subsystem=\"http\",state=\"{state}\"}} {n}"
            );
        }
        family(
            &mut out,
            "kong_nginx_requests_total",
            "gauge",
            "Number of requests total",
        );
        let _ = writeln!(
            out,
            "kong_nginx_requests_total{{node_id=\"{node_id}\",subsystem=\"http\"}} {}",
            stats.total_requests()
        );
    }
    if let Some(stats) = node.proxy_stats.get() {
        // nginx's timers are its background jobs; Sluice's are tasks on the worker runtimes.
        family(
            &mut out,
            "kong_nginx_timers",
            "gauge",
            "Number of nginx timers",
        );
        let (alive, queued) = stats.tasks();
        let _ = writeln!(out, "kong_nginx_timers{{state=\"running\"}} {alive}");
        let _ = writeln!(out, "kong_nginx_timers{{state=\"pending\"}} {queued}");
    }
    if let Some(rss) = sluice_admin::resident_bytes() {
        // Kong's per-worker Lua VM; Sluice's workers are threads of one process: its resident memory.
        family(
            &mut out,
            "kong_memory_workers_lua_vms_bytes",
            "gauge",
            "Allocated bytes in worker Lua VM",
        );
        let _ = writeln!(
            out,
            "kong_memory_workers_lua_vms_bytes{{node_id=\"{node_id}\",pid=\"{}\",kong_subsystem=\"http\"}} {rss}",
            std::process::id()
        );
    }
    shared_dicts(&mut out, node, &node_id);
    sluice_proxy::metrics::render(&mut out);
    let loads = &node.loader.stats;
    family(
        &mut out,
        "sluice_config_loads_total",
        "counter",
        "Declarative config loads (file, SIGHUP, POST /config) by result",
    );
    for (result, n) in [("success", &loads.succeeded), ("failure", &loads.failed)] {
        let _ = writeln!(
            out,
            "sluice_config_loads_total{{result=\"{result}\"}} {}",
            n.load(Ordering::Relaxed)
        );
    }
    let gauges = [
        (
            "sluice_config_load_duration_seconds",
            "Duration of the last successful config load (parse, validate, compile, commit)",
            &loads.last_total_us,
        ),
        (
            "sluice_snapshot_compile_duration_seconds",
            "Duration of the last snapshot compile (router, plugin chains, balancers)",
            &loads.last_compile_us,
        ),
    ];
    for (name, help, us) in gauges {
        family(&mut out, name, "gauge", help);
        let _ = writeln!(out, "{name} {}", us.load(Ordering::Relaxed) as f64 / 1e6);
    }
    family(
        &mut out,
        "sluice_config_entities",
        "gauge",
        "Entities in the live config",
    );
    let _ = writeln!(
        out,
        "sluice_config_entities {}",
        loads.entities.load(Ordering::Relaxed)
    );
    log_records(&mut out);
    target_health(node, &mut out);
    out
}

/// Records the log plugins could not deliver: dropped because a queue was full, or given up after
/// `max_retry_time`. A rising value means a log sink is too slow or down; proxied requests are unaffected.
fn log_records(out: &mut String) {
    type Count = fn(&str) -> u64;
    let families: [(&str, &str, Count); 2] = [
        (
            "sluice_log_records_dropped_total",
            "Log records dropped because the plugin's queue was full",
            sluice_plugins::logging::dropped_records,
        ),
        (
            "sluice_log_records_failed_total",
            "Log records lost after delivery kept failing for max_retry_time",
            sluice_plugins::logging::failed_records,
        ),
    ];
    for (name, help, count) in families {
        family(out, name, "counter", help);
        for plugin in ["http-log", "file-log"] {
            let _ = writeln!(out, "{name}{{plugin=\"{plugin}\"}} {}", count(plugin));
        }
    }
}

/// `kong_upstream_target_health`, when an enabled prometheus plugin sets `upstream_health_metrics`: one
/// series per target and state, 1 for the target's current state and 0 for the others.
fn target_health(node: &NodeControl, out: &mut String) {
    let snap = node.loader.snapshot().load();
    let config = snap.config();
    let wanted = config.plugins.iter().any(|p| {
        p.enabled && p.name == "prometheus" && p.config["upstream_health_metrics"] == true
    });
    if !wanted {
        return;
    }
    family(
        out,
        "kong_upstream_target_health",
        "gauge",
        "Health status of targets of upstream. States = healthchecks_off|healthy|unhealthy|dns_error, value is 1 when state is populated.",
    );
    for u in &config.upstreams {
        for (target, health) in snap.upstream_health(&u.name).unwrap_or_default() {
            let current = health.as_str().to_ascii_lowercase();
            for state in ["healthchecks_off", "healthy", "unhealthy", "dns_error"] {
                let _ = writeln!(
                    out,
                    "kong_upstream_target_health{{upstream=\"{}\",target=\"{t}\",address=\"{t}\",state=\"{state}\",subsystem=\"http\"}} {}",
                    escape(&u.name),
                    u8::from(state == current),
                    t = escape(&target),
                );
            }
        }
    }
}

/// Kong's shared-dictionary families. Sluice's nearest are proxy-cache's memory stores, one per
/// `memory.dictionary_name` and bounded by `mem_cache_size` as Kong bounds the dictionary: their bytes held
/// and bound, under the names Kong's dashboard charts. rate-limiting's `local` counters, which Kong keeps in
/// a dictionary too, have no bound here and are not reported.
fn shared_dicts(out: &mut String, node: &NodeControl, node_id: &str) {
    let usage = sluice_admin::Control::shared_dicts(node);
    type Pick = fn(&(String, usize, usize)) -> usize;
    let families: [(&str, &str, Pick); 2] = [
        (
            "kong_memory_lua_shared_dict_bytes",
            "Allocated slabs in bytes in a shared_dict",
            |d| d.1,
        ),
        (
            "kong_memory_lua_shared_dict_total_bytes",
            "Total capacity in bytes of a shared_dict",
            |d| d.2,
        ),
    ];
    for (name, help, pick) in families {
        family(out, name, "gauge", help);
        for dict in &usage {
            let _ = writeln!(
                out,
                "{name}{{node_id=\"{node_id}\",shared_dict=\"{}\",kong_subsystem=\"http\"}} {}",
                escape(&dict.0),
                pick(dict)
            );
        }
    }
}
