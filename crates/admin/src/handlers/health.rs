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

/// One target as the balancer sees it: its address, health word and weights.
struct TargetState {
    name: String,
    ip: String,
    port: Option<u16>,
    health: &'static str,
    weight: u64,
    available: u64,
    /// nginx's DNS source of the target (`A` for an address, `hostname` otherwise).
    dns: &'static str,
}

impl TargetState {
    fn of(t: &dyn AdminEntity, health: &[(String, &'static str)]) -> (TargetState, Value) {
        let v = t.to_json();
        let name = v["target"].as_str().unwrap_or_default().to_string();
        let word = (health.iter())
            .find(|(t, _)| t.eq_ignore_ascii_case(&name))
            .map_or("HEALTHCHECKS_OFF", |(_, h)| *h);
        let weight = v["weight"].as_u64().unwrap_or(0);
        let available = match word {
            "UNHEALTHY" | "DNS_ERROR" => 0,
            _ => weight,
        };
        let (ip, port) = name.rsplit_once(':').unwrap_or((&name, ""));
        let is_ip = ip.parse::<std::net::IpAddr>().is_ok() || ip.starts_with('[');
        let state = TargetState {
            ip: ip.trim_start_matches('[').trim_end_matches(']').to_string(),
            port: port.parse().ok(),
            health: word,
            weight,
            available,
            dns: if is_ip { "A" } else { "hostname" },
            name,
        };
        (state, v)
    }

    fn weights(&self) -> Value {
        json!({ "total": self.weight, "available": self.available, "unavailable": self.weight - self.available })
    }

    /// The `data` Kong adds to a target of `GET /upstreams/{u}/health`.
    fn data(&self) -> Value {
        json!({
            "addresses": [{ "ip": self.ip, "port": self.port, "health": self.health, "weight": self.weight }],
            "dns": self.dns,
            "weight": self.weights(),
        })
    }

    /// The target in Kong's balancer status (`getTargetStatus`).
    fn status(&self) -> Value {
        json!({
            "host": self.name.rsplit_once(':').map_or(self.name.as_str(), |(h, _)| h),
            "port": self.port,
            "dns": self.dns,
            "nodeWeight": self.weight,
            "weight": self.weights(),
            "addresses": [{
                "ip": self.ip,
                "port": self.port,
                "weight": self.weight,
                "healthy": self.available > 0,
            }],
        })
    }
}

/// `GET /upstreams/{u}/health`.
pub fn get(control: &dyn Control, key: &str, q: Option<&str>) -> Result<Reply, ApiError> {
    let config = control.config();
    let u = upstream(&config, key)?;
    let health = control.target_health(&u.name).unwrap_or_default();
    let node_id = control.node_info().node_id;
    let states: Vec<(TargetState, Value)> = (targets(&config, u).into_iter())
        .map(|t| TargetState::of(t, &health))
        .collect();
    if query::get(q, "balancer_health").is_some_and(|v| v == "1" || v == "true") {
        // Kong's `get_balancer_health`: the balancer's own verdict, `health` only when checks run, and
        // the balancer's status as `details`.
        let healthy = control.upstream_available(&u.name);
        let balancer_health = if healthy { "HEALTHY" } else { "UNHEALTHY" };
        let checks_off = health.iter().all(|(_, h)| *h == "HEALTHCHECKS_OFF");
        let total: u64 = states.iter().map(|(s, _)| s.weight).sum();
        let available: u64 = states.iter().map(|(s, _)| s.available).sum();
        let data = json!({
            "id": u.id,
            "health": if checks_off { "HEALTHCHECKS_OFF" } else { balancer_health },
            "balancer_health": balancer_health,
            "details": {
                "healthy": healthy,
                "weight": { "total": total, "available": available, "unavailable": total - available },
                "hosts": states.iter().map(|(s, _)| s.status()).collect::<Vec<_>>(),
            },
        });
        return Ok(reply::ok(
            &json!({ "data": data, "next": null, "node_id": node_id }),
        ));
    }
    let data: Vec<Value> = (states.into_iter())
        .map(|(state, mut v)| {
            v["health"] = json!(state.health);
            v["data"] = state.data();
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
