//! prometheus (priority 13): Kong's metrics for the requests of the routes it applies to.
//!
//! The instance does nothing in any phase: the proxy itself records each request into per-worker series when
//! the response head is known (see `crates/proxy/src/metrics.rs`), so a route whose only plugin is prometheus
//! stays on the fast path. [`Plugin::metrics_flags`] tells the compiler to resolve the instance per route
//! (Kong's precedence: route, service, global) instead of putting it in the chain.

use crate::plugin::{Plugin, Registered};
use crate::registry::{typed_config, BuildCtx, Builtin};
use serde::Deserialize;
use sluice_metrics::Flags;
use sluice_model::schema::{Field, Schema};
use std::sync::Arc;

/// Kong's config: every family is opt-in (3.x defaults). `upstream_health_metrics` is validated by the
/// schema and read by the node's `/metrics` (target health is not per request), so it is not here.
#[derive(Debug, Deserialize)]
struct Config {
    per_consumer: bool,
    status_code_metrics: bool,
    latency_metrics: bool,
    bandwidth_metrics: bool,
}

pub fn builtin() -> Builtin {
    let flag = || Field::boolean().default(false);
    let config = Schema::new(vec![
        ("per_consumer", flag()),
        ("status_code_metrics", flag()),
        ("latency_metrics", flag()),
        ("bandwidth_metrics", flag()),
        ("upstream_health_metrics", flag()),
        ("ai_metrics", flag()),
        // Kong 3.10's (no Wasm filters here): stored and exported only when given, for Kong 3.9.
        ("wasm_metrics", Field::boolean().only_when_set()),
    ]);
    Builtin::new("prometheus", 13, config, build)
}

fn build(_: &BuildCtx<'_>, entity: &sluice_model::Plugin) -> Result<Arc<dyn Plugin>, String> {
    let config: Config = typed_config(entity)?;
    let flags = Flags {
        status_code: config.status_code_metrics,
        latency: config.latency_metrics,
        bandwidth: config.bandwidth_metrics,
        per_consumer: config.per_consumer,
    };
    // No phase handler: the proxy records the metrics itself at fixed points.
    Ok(Registered::new("prometheus", ()).metrics(flags).build())
}

#[cfg(test)]
mod tests;
