//! Kong's upstream health endpoints: `GET /upstreams/{u}/health` (each target with its health, or the
//! whole upstream's with `?balancer_health=1`) and `POST /upstreams/{u}/targets/{t}/healthy|unhealthy`.
//! Health is runtime state, not configuration, so the writes are allowed in DB-less mode, as in Kong.

use crate::catalog::{self, AdminEntity};
use crate::errors::ApiError;
use crate::query;
use crate::reply::{self, Reply};
use crate::Control;
use http::StatusCode;
use serde_json::{json, Value};
use sluice_model::{Config, Upstream};

/// The upstream `key` names (id or name).
fn upstream<'c>(config: &'c Config, key: &str) -> Result<&'c Upstream, ApiError> {
    let by_id = uuid::Uuid::parse_str(key).ok();
    config
        .upstreams
        .iter()
        .find(|u| Some(u.id) == by_id || u.name.eq_ignore_ascii_case(key))
        .ok_or(ApiError::NotFound)
}

/// The targets of `u`, in config order.
fn targets<'c>(config: &'c Config, u: &Upstream) -> Vec<&'c dyn AdminEntity> {
    catalog::collection("targets")
        .map(|c| (c.entities)(config))
        .unwrap_or_default()
        .into_iter()
        .filter(|t| t.foreign("upstream") == Some(u.id))
        .collect()
}

/// `GET /upstreams/{u}/health`.
pub fn get(control: &dyn Control, key: &str, q: Option<&str>) -> Result<Reply, ApiError> {
    let config = control.config();
    let u = upstream(&config, key)?;
    let health = control.target_health(&u.name).unwrap_or_default();
    let node_id = control.node_info().node_id;
    let word = |target: &str| {
        health
            .iter()
            .find(|(t, _)| t.eq_ignore_ascii_case(target))
            .map_or("HEALTHCHECKS_OFF", |(_, h)| *h)
    };
    if query::get(q, "balancer_health").is_some_and(|v| v == "1" || v == "true") {
        let overall = if health.iter().all(|(_, h)| *h == "HEALTHCHECKS_OFF") {
            "HEALTHCHECKS_OFF"
        } else if control.upstream_available(&u.name) {
            "HEALTHY"
        } else {
            "UNHEALTHY"
        };
        let data = json!({ "id": u.id, "health": overall });
        return Ok(reply::ok(
            &json!({ "data": data, "next": null, "node_id": node_id }),
        ));
    }
    let data: Vec<Value> = targets(&config, u)
        .into_iter()
        .map(|t| {
            let mut v = t.to_json();
            let name = v["target"].as_str().unwrap_or_default().to_string();
            let h = word(&name);
            let weight = v["weight"].as_u64().unwrap_or(0);
            let available = if h == "UNHEALTHY" || h == "DNS_ERROR" {
                0
            } else {
                weight
            };
            let (ip, port) = name.rsplit_once(':').unwrap_or((&name, ""));
            v["health"] = json!(h);
            v["data"] = json!({
                "addresses": [{
                    "ip": ip.trim_start_matches('[').trim_end_matches(']'),
                    "port": port.parse::<u16>().ok(),
                    "health": h,
                    "weight": weight,
                }],
                "dns": if ip.parse::<std::net::IpAddr>().is_ok() || ip.starts_with('[') { "A" } else { "hostname" },
                "weight": { "total": weight, "available": available, "unavailable": weight - available },
            });
            v
        })
        .collect();
    Ok(reply::ok(
        &json!({ "data": data, "next": null, "node_id": node_id }),
    ))
}

/// `POST /upstreams/{u}/targets/{t}/healthy|unhealthy`: 204, or 404 for an unknown upstream or target.
pub fn set(
    control: &dyn Control,
    upstream_key: &str,
    target_key: &str,
    healthy: bool,
) -> Result<Reply, ApiError> {
    let config = control.config();
    let u = upstream(&config, upstream_key)?;
    let target = catalog::find(&targets(&config, u), target_key)
        .map(|t| {
            t.to_json()["target"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .unwrap_or_else(|| target_key.to_string());
    if control.set_target_health(&u.name, &target, healthy) {
        Ok(reply::empty(StatusCode::NO_CONTENT))
    } else {
        Err(ApiError::NotFound)
    }
}
