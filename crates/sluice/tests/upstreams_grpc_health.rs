//! Active health checks of `type: grpc` and `grpcs` on the real binary: probes call the targets' standard
//! gRPC health service (the testkit's tonic upstream serves it). A target that answers `SERVING` stays
//! healthy; `NOT_SERVING` counts as an HTTP failure, a target that is down as a TCP failure, one that
//! never answers as a timeout (each upstream here counts only one kind, so the kind is what is tested);
//! an unhealthy target gets no calls and comes back when it serves again. Over TLS, the probe speaks h2 by
//! ALPN and verifies the certificate when `https_verify_certificate` says so.

mod support;

use sluice_testkit::{self_signed, Gateway, GrpcClient, GrpcRequest, GrpcUpstream, Msg};
use std::net::SocketAddr;
use std::time::Duration;
use support::{gateway, health_of, time_until};

const WAIT: Duration = Duration::from_secs(10);

/// A config part: gRPC service and upstream `name` (routed by host `{name}.grpc.test`), its targets on
/// 127.0.0.1, probed every 100 ms by `kind` with a 500 ms timeout, `successes: 2` and the unhealthy
/// counters given as YAML (e.g. `http_failures: 2`).
fn grpc_service(name: &str, kind: &str, verify: bool, counters: &str, ports: &[u16]) -> String {
    let protocol = if kind == "grpcs" { "grpcs" } else { "grpc" };
    let targets: Vec<String> = ports
        .iter()
        .map(|p| format!("{{target: \"127.0.0.1:{p}\"}}"))
        .collect();
    format!(
        "- service: {{name: {name}, protocol: {protocol}, host: {name}, routes: [{{protocols: [{protocol}], hosts: [{name}.grpc.test]}}]}}\n  upstream: {{name: {name}, targets: [{targets}], healthchecks: {{active: {{type: {kind}, https_verify_certificate: {verify}, timeout: 0.5, healthy: {{interval: 0.1, successes: 2}}, unhealthy: {{interval: 0.1, {counters}}}}}}}}}\n",
        targets = targets.join(", ")
    )
}

/// The whole config of [`grpc_service`] parts.
fn doc(parts: &[String]) -> String {
    let (mut services, mut upstreams) = (String::new(), String::new());
    for p in parts {
        for line in p.lines() {
            let line = line.trim_start_matches("- ").trim_start();
            if let Some(s) = line.strip_prefix("service: ") {
                services.push_str(&format!("- {s}\n"));
            } else if let Some(u) = line.strip_prefix("upstream: ") {
                upstreams.push_str(&format!("- {u}\n"));
            }
        }
    }
    format!("_format_version: \"3.0\"\nservices:\n{services}upstreams:\n{upstreams}")
}

fn target(port: u16) -> String {
    format!("127.0.0.1:{port}")
}

/// Makes `n` unary calls through the gateway to the service routed by `host`; all must succeed.
async fn calls(gw: &Gateway, host: &str, n: usize) {
    let addr = SocketAddr::from(([127, 0, 0, 1], gw.proxy_port()));
    let mut client = GrpcClient::connect_as(addr, host).await.unwrap();
    for i in 0..n {
        let reply = client.unary(GrpcRequest::new(Msg::text("hi"))).await;
        assert!(reply.is_ok(), "call {i}: {reply:?}\n{}", gw.log());
    }
}

/// Waits until `up` has answered `n` more health checks than `since`.
async fn probed(up: &GrpcUpstream, since: u64, n: u64) {
    let deadline = tokio::time::Instant::now() + WAIT;
    while up.health_checks() < since + n {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{} health checks",
            up.health_checks()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_probes_call_the_health_service() {
    let (good, flip) = (GrpcUpstream::start(), GrpcUpstream::start());
    let mut down = GrpcUpstream::start();
    let down_port = down.port();
    // Accepts connections (the kernel's backlog) and never answers.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let silent_port = silent.local_addr().unwrap().port();
    let gw = gateway(&doc(&[
        grpc_service(
            "flip",
            "grpc",
            true,
            "http_failures: 2",
            &[good.port(), flip.port()],
        ),
        grpc_service(
            "down",
            "grpc",
            true,
            "tcp_failures: 2",
            &[good.port(), down_port],
        ),
        grpc_service(
            "silent",
            "grpc",
            true,
            "timeouts: 1",
            &[good.port(), silent_port],
        ),
    ]));

    // Serving targets are probed by gRPC and stay healthy.
    probed(&flip, 0, 4).await;
    probed(&down, 0, 4).await;
    for (upstream, port) in [("flip", flip.port()), ("down", down_port)] {
        assert_eq!(health_of(&gw, upstream, &target(port)).await, "HEALTHY");
        assert_eq!(
            health_of(&gw, upstream, &target(good.port())).await,
            "HEALTHY"
        );
    }
    // A target that never answers: its probes time out (the only counter this upstream has).
    time_until(&gw, "silent", &target(silent_port), "UNHEALTHY", WAIT).await;
    assert_eq!(
        health_of(&gw, "silent", &target(good.port())).await,
        "HEALTHY"
    );

    // NOT_SERVING: an HTTP failure; no calls reach the target until it serves again.
    flip.set_serving(false);
    time_until(&gw, "flip", &target(flip.port()), "UNHEALTHY", WAIT).await;
    let (before, good_before) = (flip.calls(), good.calls());
    calls(&gw, "flip.grpc.test", 20).await;
    assert_eq!(flip.calls(), before, "an unhealthy target got calls");
    assert_eq!(good.calls(), good_before + 20);
    flip.set_serving(true);
    time_until(&gw, "flip", &target(flip.port()), "HEALTHY", WAIT).await;
    let before = flip.calls();
    calls(&gw, "flip.grpc.test", 20).await;
    assert!(flip.calls() > before, "the recovered target got no calls");

    // A target that went away: a TCP failure; it comes back with its server.
    drop(down);
    time_until(&gw, "down", &target(down_port), "UNHEALTHY", WAIT).await;
    let good_before = good.calls();
    calls(&gw, "down.grpc.test", 10).await;
    assert_eq!(good.calls(), good_before + 10);
    down = GrpcUpstream::on_port(down_port);
    time_until(&gw, "down", &target(down_port), "HEALTHY", WAIT).await;
    assert!(down.health_checks() >= 2);
    drop(silent);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpcs_probes_speak_h2_over_tls_and_verify_when_asked() {
    let cert = self_signed(&["localhost"]);
    let secure = GrpcUpstream::tls(&cert);
    let gw = gateway(&doc(&[
        grpc_service(
            "open",
            "grpcs",
            false,
            "http_failures: 1, tcp_failures: 1",
            &[secure.port()],
        ),
        // The test certificate is not in the system roots: every probe fails its handshake.
        grpc_service("strict", "grpcs", true, "tcp_failures: 1", &[secure.port()]),
    ]));
    let at = target(secure.port());
    time_until(&gw, "strict", &at, "UNHEALTHY", WAIT).await;
    let since = secure.health_checks();
    probed(&secure, since, 3).await;
    assert_eq!(health_of(&gw, "open", &at).await, "HEALTHY");
    secure.set_serving(false);
    time_until(&gw, "open", &at, "UNHEALTHY", WAIT).await;
    secure.set_serving(true);
    time_until(&gw, "open", &at, "HEALTHY", WAIT).await;
    assert_eq!(health_of(&gw, "strict", &at).await, "UNHEALTHY");
}
