//! The cluster of the hybrid tests (`hybrid.rs`, `hybrid_deltas.rs`): certificates, a control plane and
//! data planes of the real binary on loopback, a config of routes, and waiting for a path's status.

#![allow(dead_code)]

use sluice_testkit::{client, Gateway, TestCert};
use std::time::{Duration, Instant};

pub const BIN: &str = env!("CARGO_BIN_EXE_sluice");

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Writes a cluster certificate and key into `dir`; their paths.
pub fn cert_files(dir: &std::path::Path, cert: &TestCert) -> (String, String) {
    let n = std::fs::read_dir(dir).map_or(0, |d| d.count());
    let (c, k) = (
        dir.join(format!("cluster{n}.crt")),
        dir.join(format!("cluster{n}.key")),
    );
    std::fs::write(&c, &cert.cert_pem).unwrap();
    std::fs::write(&k, &cert.key_pem).unwrap();
    (c.display().to_string(), k.display().to_string())
}

/// A service with a route per path (`/x` → route `rx`). Every entity has its timestamps, so one that is
/// unchanged stays equal across `POST /config`s (a load stamps the entities without them with its time).
pub fn config(upstream: u16, paths: &[&str]) -> String {
    config_at("127.0.0.1", upstream, paths)
}

/// [`config`] with the upstream on another address (`host`).
pub fn config_at(host: &str, upstream: u16, paths: &[&str]) -> String {
    let mut yaml = format!(
        "_format_version: \"3.0\"\nservices:\n- name: s\n  url: http://{host}:{upstream}\n  created_at: 1700000000\n  updated_at: 1700000000\n  routes:\n"
    );
    for p in paths {
        yaml.push_str(&format!(
            "  - {{name: r{}, paths: [{p}], {STAMPS}}}\n",
            &p[1..]
        ));
    }
    yaml
}

const STAMPS: &str = "created_at: 1700000000, updated_at: 1700000000";

/// Replaces the CP's config (`POST /config`).
pub async fn post_config(cp: &Gateway, yaml: String) {
    let resp = client()
        .post(cp.admin_url("/config"))
        .header("content-type", "application/yaml")
        .body(yaml)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 201, "{}", resp.text().await.unwrap());
}

/// A control plane on its gateway's own `cluster_listen` port ([`Gateway::cluster_port`]), so that a port
/// taken between its pick and the bind makes the start retry on fresh ports.
pub fn control_plane(cert: &(String, String), yaml: &str) -> Gateway {
    control_plane_with(cert, yaml, &[])
}

pub fn control_plane_with(cert: &(String, String), yaml: &str, env: &[(&str, &str)]) -> Gateway {
    let role = [("SLUICE_ROLE", "control_plane")];
    node(Gateway::builder(BIN).config_yaml(yaml), cert, &role, env)
}

pub fn data_plane(cluster_port: u16, cert: &(String, String)) -> Gateway {
    data_plane_with(cluster_port, cert, &[])
}

pub fn data_plane_with(
    cluster_port: u16,
    cert: &(String, String),
    env: &[(&str, &str)],
) -> Gateway {
    let cp = format!("127.0.0.1:{cluster_port}");
    let role = [
        ("SLUICE_ROLE", "data_plane"),
        ("SLUICE_CLUSTER_CONTROL_PLANE", &cp),
    ];
    let builder = Gateway::builder(BIN).no_config().expect_not_ready();
    node(builder, cert, &role, env)
}

/// Starts a node of a `role` with the cluster certificate and further settings.
pub fn node(
    mut builder: sluice_testkit::GatewayBuilder,
    cert: &(String, String),
    role: &[(&str, &str)],
    env: &[(&str, &str)],
) -> Gateway {
    builder = builder
        .env("SLUICE_CLUSTER_CERT", &cert.0)
        .env("SLUICE_CLUSTER_CERT_KEY", &cert.1);
    for (k, v) in role.iter().chain(env) {
        builder = builder.env(k, v);
    }
    builder.start()
}

pub async fn status(gw: &Gateway, path: &str) -> u16 {
    match client().get(gw.proxy_url(path)).send().await {
        Ok(r) => r.status().as_u16(),
        Err(_) => 0,
    }
}

/// Waits until `path` answers `want` on `gw`; the time it took.
pub async fn until(gw: &Gateway, path: &str, want: u16, within: Duration) -> Duration {
    let started = Instant::now();
    loop {
        let got = status(gw, path).await;
        if got == want {
            return started.elapsed();
        }
        assert!(
            started.elapsed() < within,
            "{path} answered {got}, not {want}, for {within:?}:\n{}",
            gw.log()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The lines a data plane logs when its link to the CP ends (after it has written its store's queue).
pub const LINK_ENDED: [&str; 3] = [
    "control plane closed the cluster link",
    "cluster link failed",
    "cluster link closed",
];

/// How many times `gw`'s link to its CP has ended so far ([`LINK_ENDED`]).
pub fn links_ended(gw: &Gateway) -> usize {
    let log = plain_log(gw);
    LINK_ENDED
        .iter()
        .map(|line| log.matches(line).count())
        .sum()
}

/// Waits until `gw`'s link to its CP has ended more than `before` times.
pub async fn until_link_ended(gw: &Gateway, before: usize, within: Duration) {
    let started = Instant::now();
    while links_ended(gw) <= before {
        assert!(
            started.elapsed() < within,
            "the link did not end within {within:?}:\n{}",
            gw.log()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A node's log without its colours (the ANSI escapes tracing writes around field names).
pub fn plain_log(gw: &Gateway) -> String {
    let log = gw.log();
    let mut out = String::with_capacity(log.len());
    let mut rest = log.as_str();
    while let Some(at) = rest.find('\x1b') {
        out.push_str(&rest[..at]);
        rest = rest[at..].split_once('m').map_or("", |(_, after)| after);
    }
    out.push_str(rest);
    out
}
