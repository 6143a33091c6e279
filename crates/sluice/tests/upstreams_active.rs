//! Active health checks and reloads on the real binary: probes (http, https, tcp) detecting each kind of
//! failure and the recovery (with the measured times), one prober per process, health kept through reloads
//! mid-outage, probes stopped with their upstream, requests in flight to a removed target finishing.

mod support;

use serde_json::Value;
use sluice_testkit::{client, closed_port, EchoUpstream, FlakyUpstream, Mode};
use std::time::{Duration, Instant};
use support::{doc, gateway, health_of, hit, reload, service, time_until, PASSIVE};

/// A tuned active check: probes every 250 ms, 2 results either way, 250 ms probe timeout.
const ACTIVE_TUNED: &str = "{active: {http_path: /probe, timeout: 0.25, healthy: {interval: 0.25, successes: 2}, unhealthy: {interval: 0.25, http_failures: 2, tcp_failures: 2, timeouts: 2}}}";
/// A moderate one: every second, 3 results either way.
const ACTIVE_MODERATE: &str = "{active: {http_path: /probe, healthy: {interval: 1, successes: 3}, unhealthy: {interval: 1, http_failures: 3, tcp_failures: 3, timeouts: 3}}}";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn active_checks_detect_each_failure_and_the_recovery() {
    let good = EchoUpstream::named("good");
    let modes = [
        ("a500", Mode::Status(500), ACTIVE_TUNED),
        ("areset", Mode::Reset, ACTIVE_TUNED),
        (
            "aslow",
            Mode::SlowHeaders(Duration::from_secs(2)),
            ACTIVE_TUNED,
        ),
        ("amoderate", Mode::Status(503), ACTIVE_MODERATE),
    ];
    let flaky: Vec<FlakyUpstream> = modes
        .iter()
        .map(|(n, ..)| FlakyUpstream::start(n))
        .collect();
    let parts: Vec<String> = modes
        .iter()
        .zip(&flaky)
        .map(|((name, _, hc), f)| service(name, 0, 5000, hc, &[f.port(), good.port()]))
        .collect();
    let gw = gateway(&doc(&parts));
    let started = Instant::now();
    for ((name, mode, _), f) in modes.iter().zip(&flaky) {
        let target = format!("127.0.0.1:{}", f.port());
        f.set(*mode);
        let down = time_until(&gw, name, &target, "UNHEALTHY", Duration::from_secs(10)).await;
        for _ in 0..5 {
            assert_eq!(
                hit(&gw, &format!("/{name}"), &[]).await,
                (200, "good".to_string())
            );
        }
        f.set(Mode::Healthy);
        let up = time_until(&gw, name, &target, "HEALTHY", Duration::from_secs(10)).await;
        eprintln!("active {name}: unhealthy after {down:?}, healthy again after {up:?}");
    }
    // One prober for the process (two workers): about one probe per interval per target, not two.
    let elapsed = started.elapsed().as_secs_f64();
    let probes = flaky[0].probes() as f64;
    assert!(
        probes <= elapsed / 0.25 + 3.0,
        "{probes} probes in {elapsed:.1}s"
    );
    assert!(probes >= 4.0, "{probes} probes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reload_mid_outage_keeps_the_target_unhealthy() {
    let (good, other) = (EchoUpstream::named("good"), EchoUpstream::named("other"));
    let down = FlakyUpstream::start("down");
    let checks = "{passive: {unhealthy: {http_failures: 1}}, active: {http_path: /probe, healthy: {interval: 0.2, successes: 3}, unhealthy: {interval: 0.2, http_failures: 3}}}";
    let before = doc(&[service("o", 0, 1000, checks, &[down.port(), good.port()])]);
    let gw = gateway(&before);
    down.set(Mode::Status(500));
    let target = format!("127.0.0.1:{}", down.port());
    time_until(&gw, "o", &target, "UNHEALTHY", Duration::from_secs(5)).await;
    // Reload with a different target list and an extra service: the outage is remembered.
    let after = doc(&[
        service(
            "o",
            0,
            1000,
            checks,
            &[down.port(), good.port(), other.port()],
        ),
        service("x", 0, 1000, "{}", &[other.port()]),
    ]);
    let seen = down.requests();
    for round in 0..3 {
        reload(&gw, if round % 2 == 0 { &after } else { &before }).await;
        assert_eq!(
            health_of(&gw, "o", &target).await,
            "UNHEALTHY",
            "round {round}"
        );
        for _ in 0..20 {
            let (status, name) = hit(&gw, "/o", &[]).await;
            assert_eq!(status, 200, "round {round}: {name}");
        }
    }
    assert_eq!(
        down.requests(),
        seen,
        "the dead target got traffic after a reload"
    );
    // And it still recovers through the (restarted) active checker.
    down.set(Mode::Healthy);
    time_until(&gw, "o", &target, "HEALTHY", Duration::from_secs(5)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_and_tcp_probes() {
    let cert = sluice_testkit::self_signed(&["localhost"]);
    let tls = sluice_testkit::TlsEchoUpstream::start(&cert, None);
    let echo = EchoUpstream::named("echo");
    let dead = closed_port();
    let probe = |kind: &str, verify: bool| {
        format!("{{active: {{type: {kind}, https_verify_certificate: {verify}, timeout: 0.5, healthy: {{interval: 0.1, successes: 1}}, unhealthy: {{interval: 0.1, tcp_failures: 1, http_failures: 1, timeouts: 1}}}}}}")
    };
    let gw = gateway(&doc(&[
        service("tlsok", 0, 1000, &probe("https", false), &[tls.port()]),
        service("tlsbad", 0, 1000, &probe("https", true), &[tls.port()]),
        service("tcp", 0, 1000, &probe("tcp", false), &[dead, echo.port()]),
    ]));
    let tls_target = format!("127.0.0.1:{}", tls.port());
    time_until(
        &gw,
        "tlsbad",
        &tls_target,
        "UNHEALTHY",
        Duration::from_secs(5),
    )
    .await;
    time_until(
        &gw,
        "tcp",
        &format!("127.0.0.1:{dead}"),
        "UNHEALTHY",
        Duration::from_secs(5),
    )
    .await;
    // Only a successful https probe brings a target marked down back.
    let url = gw.admin_url(&format!("/upstreams/tlsok/targets/{tls_target}/unhealthy"));
    assert_eq!(client().post(url).send().await.unwrap().status(), 204);
    time_until(&gw, "tlsok", &tls_target, "HEALTHY", Duration::from_secs(5)).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(health_of(&gw, "tlsok", &tls_target).await, "HEALTHY");
    assert_eq!(
        health_of(&gw, "tcp", &format!("127.0.0.1:{}", echo.port())).await,
        "HEALTHY"
    );
    assert_eq!(echo.requests(), 0, "a tcp probe sends no request");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn removing_an_upstream_stops_its_probes() {
    let f = FlakyUpstream::start("f");
    let checks = "{active: {http_path: /probe, healthy: {interval: 0.1, successes: 1}, unhealthy: {interval: 0.1, http_failures: 1}}}";
    let gw = gateway(&doc(&[service("gone", 0, 1000, checks, &[f.port()])]));
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(f.probes() >= 2, "{} probes", f.probes());
    let other = EchoUpstream::named("other");
    reload(
        &gw,
        &doc(&[service("kept", 0, 1000, "{}", &[other.port()])]),
    )
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let after = f.probes();
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(
        f.probes(),
        after,
        "probes continued after the upstream was removed"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_in_flight_to_a_removed_target_finish() {
    let slow = FlakyUpstream::start("slow");
    slow.set(Mode::SlowHeaders(Duration::from_millis(1500)));
    let next = EchoUpstream::named("next");
    let gw = gateway(&doc(&[service("drain", 0, 5000, PASSIVE, &[slow.port()])]));
    let url = gw.proxy_url("/drain");
    let pending: Vec<_> = (0..4)
        .map(|_| {
            let url = url.clone();
            tokio::spawn(async move {
                let resp = client().get(url).send().await.unwrap();
                let status = resp.status().as_u16();
                let body: Value = resp.json().await.unwrap_or(Value::Null);
                (status, body["upstream"].as_str().unwrap_or("").to_string())
            })
        })
        .collect();
    // All four are at the upstream (waiting for their headers) before the reload.
    while slow.requests() < 4 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    reload(
        &gw,
        &doc(&[service("drain", 0, 5000, PASSIVE, &[next.port()])]),
    )
    .await;
    assert_eq!(hit(&gw, "/drain", &[]).await, (200, "next".to_string()));
    for p in pending {
        assert_eq!(
            p.await.unwrap(),
            (200, "slow".to_string()),
            "an in-flight request to the removed target"
        );
    }
}
