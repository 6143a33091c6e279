//! Helpers shared by the `upstreams_*` tests: posting configs, reading target health, timing transitions.

#![allow(dead_code)]

use serde_json::Value;
use sluice_testkit::{client, Gateway};
use std::time::{Duration, Instant};

/// Passive checks that take a target out after 2 failures of any kind (and never bring it back).
pub const PASSIVE: &str =
    "{passive: {unhealthy: {http_failures: 2, tcp_failures: 2, timeouts: 2}}}";

pub const BIN: &str = env!("CARGO_BIN_EXE_sluice");

/// Starts the real binary with `yaml` and two workers (so health must be shared between workers).
pub fn gateway(yaml: &str) -> Gateway {
    Gateway::builder(BIN).workers(2).config_yaml(yaml).start()
}

/// Replaces the config through `POST /config` (a reload).
pub async fn reload(gw: &Gateway, yaml: &str) {
    let resp = client()
        .post(gw.admin_url("/config"))
        .header("content-type", "application/x-yaml")
        .body(yaml.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 201, "{}", resp.text().await.unwrap());
}

/// A proxied GET: status and the echo body's `upstream` name ("" when the gateway answered).
pub async fn hit(gw: &Gateway, path: &str, headers: &[(&str, &str)]) -> (u16, String) {
    let mut req = client().get(gw.proxy_url(path));
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let resp = req.send().await.unwrap();
    let status = resp.status().as_u16();
    let body: Value = resp.json().await.unwrap_or(Value::Null);
    (status, body["upstream"].as_str().unwrap_or("").to_string())
}

/// `target → health` from `GET /upstreams/{u}/health`.
pub async fn health(gw: &Gateway, upstream: &str) -> Vec<(String, String)> {
    let body: Value =
        sluice_testkit::get_json(&gw.admin_url(&format!("/upstreams/{upstream}/health")), &[])
            .await
            .2;
    body["data"]
        .as_array()
        .unwrap_or_else(|| panic!("no data: {body}"))
        .iter()
        .map(|t| {
            let name = t["target"].as_str().unwrap().to_string();
            (name, t["health"].as_str().unwrap().to_string())
        })
        .collect()
}

/// The health of one target.
pub async fn health_of(gw: &Gateway, upstream: &str, target: &str) -> String {
    health(gw, upstream)
        .await
        .into_iter()
        .find(|(t, _)| t == target)
        .map(|(_, h)| h)
        .unwrap_or_else(|| panic!("no target {target}"))
}

/// How long until `target` reports `want` (polled every 10 ms); panics after `limit`.
pub async fn time_until(
    gw: &Gateway,
    upstream: &str,
    target: &str,
    want: &str,
    limit: Duration,
) -> Duration {
    let started = Instant::now();
    loop {
        if health_of(gw, upstream, target).await == want {
            return started.elapsed();
        }
        assert!(
            started.elapsed() < limit,
            "{target} not {want} after {limit:?}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// A config part: service `/{name}` (with `retries` and `read_timeout` ms) over upstream `name` with
/// `healthchecks` (YAML flow text) and `targets` on 127.0.0.1; join parts with [`doc`].
pub fn service(
    name: &str,
    retries: u32,
    read_timeout: u32,
    healthchecks: &str,
    targets: &[u16],
) -> String {
    let targets: Vec<String> = targets
        .iter()
        .map(|p| format!("{{target: \"127.0.0.1:{p}\"}}"))
        .collect();
    format!(
        // Names quoted: Kong (and Sluice) read a bare `on` or `off` as a boolean.
        "services:\n- {{name: '{name}', host: '{name}', retries: {retries}, read_timeout: {read_timeout}, routes: [{{paths: [/{name}]}}]}}\nupstreams:\n- name: '{name}'\n  healthchecks: {healthchecks}\n  targets: [{}]\n",
        targets.join(", ")
    )
}

/// A whole config from [`service`] parts (their `services:` and `upstreams:` blocks merged).
pub fn doc(parts: &[String]) -> String {
    let (mut services, mut upstreams) = (String::new(), String::new());
    for p in parts {
        let (s, u) = p.split_once("upstreams:\n").unwrap();
        services.push_str(s.trim_start_matches("services:\n"));
        upstreams.push_str(u);
    }
    format!("_format_version: \"3.0\"\nservices:\n{services}upstreams:\n{upstreams}")
}
