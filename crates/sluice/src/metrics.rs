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
    let _ = writeln!(
        out,
        "kong_node_info{{node_id=\"{node_id}\",version=\"{}\"}} 1",
        escape(env!("CARGO_PKG_VERSION"))
    );
    if let Some(stats) = node.proxy_stats.get() {
        family(
            &mut out,
            "kong_nginx_connections_total",
            "gauge",
            "Number of connections by subsystem",
        );
        for (state, n) in [
            ("accepted", stats.accepted_connections()),
            ("active", stats.active_connections()),
            ("handled", stats.accepted_connections()),
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
    out
}
