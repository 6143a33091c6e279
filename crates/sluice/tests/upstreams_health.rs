//! Health checks on the real binary with upstreams that fail in each way (500s, accept-then-reset, slow
//! headers, closed port) and recover: passive and active transitions both ways, the Admin API health
//! endpoints, retries landing on a healthy target, and health surviving a reload mid-outage.

mod support;

use serde_json::Value;
use sluice_testkit::{client, closed_port, EchoUpstream, FlakyUpstream, Mode};
use std::time::{Duration, Instant};
use support::{gateway, health, health_of, hit, reload, time_until};

/// One service `/{name}` over upstream `name` with a flaky target first and a good one second.
fn service(
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
        "services:\n- {{name: {name}, host: {name}, retries: {retries}, read_timeout: {read_timeout}, routes: [{{paths: [/{name}]}}]}}\nupstreams:\n- name: {name}\n  healthchecks: {healthchecks}\n  targets: [{}]\n",
        targets.join(", ")
    )
}

fn doc(parts: &[String]) -> String {
    // Merge the `services:` and `upstreams:` blocks of several `service()` outputs.
    let (mut services, mut upstreams) = (String::new(), String::new());
    for p in parts {
        let (s, u) = p.split_once("upstreams:\n").unwrap();
        services.push_str(s.trim_start_matches("services:\n"));
        upstreams.push_str(u);
    }
    format!("_format_version: \"3.0\"\nservices:\n{services}upstreams:\n{upstreams}")
}

const PASSIVE: &str = "{passive: {unhealthy: {http_failures: 2, tcp_failures: 2, timeouts: 2}}}";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn passive_checks_take_a_target_out_for_each_kind_of_failure() {
    let good = EchoUpstream::named("good");
    let cases = [
        ("p500", Mode::Status(500), 500u16),
        ("preset", Mode::Reset, 200),
        ("pslow", Mode::SlowHeaders(Duration::from_millis(800)), 504),
    ];
    let flaky: Vec<FlakyUpstream> = cases
        .iter()
        .map(|(n, ..)| FlakyUpstream::start(n))
        .collect();
    let parts: Vec<String> = cases
        .iter()
        .zip(&flaky)
        .map(|((name, ..), f)| service(name, 1, 300, PASSIVE, &[f.port(), good.port()]))
        .collect();
    let gw = gateway(&doc(&parts));
    for ((name, mode, failing_status), f) in cases.iter().zip(&flaky) {
        let target = format!("127.0.0.1:{}", f.port());
        assert_eq!(health_of(&gw, name, &target).await, "HEALTHY");
        f.set(*mode);
        let mut statuses = Vec::new();
        for _ in 0..8 {
            statuses.push(hit(&gw, &format!("/{name}"), &[]).await.0);
        }
        assert!(
            statuses.iter().all(|s| *s == 200 || s == failing_status),
            "{name}: {statuses:?}"
        );
        assert_eq!(
            health_of(&gw, name, &target).await,
            "UNHEALTHY",
            "{name}: {statuses:?}"
        );
        let seen = f.requests();
        for _ in 0..10 {
            assert_eq!(
                hit(&gw, &format!("/{name}"), &[]).await,
                (200, "good".to_string())
            );
        }
        assert_eq!(
            f.requests(),
            seen,
            "{name}: an unhealthy target got traffic"
        );
        // Passive checks alone never bring a target back (no traffic reaches it): the Admin API does.
        f.set(Mode::Healthy);
        let url = gw.admin_url(&format!("/upstreams/{name}/targets/{target}/healthy"));
        assert_eq!(client().post(url).send().await.unwrap().status(), 204);
        assert_eq!(health_of(&gw, name, &target).await, "HEALTHY");
        let mut names = Vec::new();
        for _ in 0..4 {
            names.push(hit(&gw, &format!("/{name}"), &[]).await.1);
        }
        assert!(
            names.contains(&name.to_string()),
            "{name}: back in rotation: {names:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admin_health_endpoints_follow_kong() {
    let (a, b) = (EchoUpstream::named("a"), EchoUpstream::named("b"));
    let yaml = doc(&[
        service("off", 0, 1000, "{}", &[a.port(), b.port()]),
        service("on", 0, 1000, PASSIVE, &[a.port(), b.port()]),
    ]);
    let gw = gateway(&yaml);
    let body: Value = client()
        .get(gw.admin_url("/upstreams/on/health"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(body["node_id"].is_string(), "{body}");
    assert_eq!(body["next"], Value::Null);
    let first = &body["data"][0];
    assert_eq!(first["target"], format!("127.0.0.1:{}", a.port()));
    assert_eq!(
        (first["weight"].as_u64(), first["health"].as_str()),
        (Some(100), Some("HEALTHY"))
    );
    assert!(
        first["upstream"]["id"].is_string() && first["id"].is_string(),
        "{first}"
    );
    assert_eq!(first["data"]["addresses"][0]["port"], a.port());
    // No check configured: Kong's HEALTHCHECKS_OFF.
    let off = health(&gw, "off").await;
    assert!(off.iter().all(|(_, h)| h == "HEALTHCHECKS_OFF"), "{off:?}");
    // Marking by hand, by target text or by id; unknown targets and upstreams are 404.
    let b_target = format!("127.0.0.1:{}", b.port());
    let post =
        |path: String| async move { client().post(path).send().await.unwrap().status().as_u16() };
    assert_eq!(
        post(gw.admin_url(&format!("/upstreams/on/targets/{b_target}/unhealthy"))).await,
        204
    );
    assert_eq!(health_of(&gw, "on", &b_target).await, "UNHEALTHY");
    for _ in 0..6 {
        assert_eq!(hit(&gw, "/on", &[]).await, (200, "a".to_string()));
    }
    let b_id = body["data"][1]["id"].as_str().unwrap().to_string();
    assert_eq!(
        post(gw.admin_url(&format!("/upstreams/on/targets/{b_id}/healthy"))).await,
        204
    );
    assert_eq!(health_of(&gw, "on", &b_target).await, "HEALTHY");
    assert_eq!(
        post(gw.admin_url("/upstreams/on/targets/10.9.9.9:1/healthy")).await,
        404
    );
    assert_eq!(
        post(gw.admin_url("/upstreams/nope/targets/x/healthy")).await,
        404
    );
    // Every target down: Kong's 503, and the balancer health says so.
    let a_target = format!("127.0.0.1:{}", a.port());
    for t in [&a_target, &b_target] {
        assert_eq!(
            post(gw.admin_url(&format!("/upstreams/on/targets/{t}/unhealthy"))).await,
            204
        );
    }
    let resp = client().get(gw.proxy_url("/on")).send().await.unwrap();
    assert_eq!(resp.status(), 503);
    let msg: Value = resp.json().await.unwrap();
    assert_eq!(
        msg["message"],
        "failure to get a peer from the ring-balancer"
    );
    let overall: Value = client()
        .get(gw.admin_url("/upstreams/on/health?balancer_health=1"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(overall["data"]["health"], "UNHEALTHY", "{overall}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retries_land_on_a_healthy_target() {
    let good = EchoUpstream::named("good");
    let reset = FlakyUpstream::start("reset");
    reset.set(Mode::Reset);
    let yaml = doc(&[service(
        "r",
        2,
        1000,
        "{}",
        &[closed_port(), reset.port(), good.port()],
    )]);
    let gw = gateway(&yaml);
    for _ in 0..30 {
        assert_eq!(hit(&gw, "/r", &[]).await, (200, "good".to_string()));
    }
}

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
async fn default_checks_are_off_and_retries_alone_route_around_a_dead_target() {
    let good = EchoUpstream::named("good");
    let dead = FlakyUpstream::start("dead");
    dead.set(Mode::Status(500));
    let gw = gateway(&doc(&[service(
        "d",
        5,
        1000,
        "{}",
        &[dead.port(), good.port()],
    )]));
    let mut fails = 0;
    for _ in 0..20 {
        if hit(&gw, "/d", &[]).await.0 == 500 {
            fails += 1;
        }
    }
    assert_eq!(
        fails, 10,
        "round-robin keeps sending every other request to the 500 target"
    );
    let target = format!("127.0.0.1:{}", dead.port());
    assert_eq!(health_of(&gw, "d", &target).await, "HEALTHCHECKS_OFF");
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
async fn target_health_is_a_prometheus_metric_when_asked_for() {
    let (a, b) = (EchoUpstream::named("a"), EchoUpstream::named("b"));
    let mut yaml = doc(&[service("m", 0, 1000, PASSIVE, &[a.port(), b.port()])]);
    yaml.push_str("plugins:\n- name: prometheus\n  config: {upstream_health_metrics: true}\n");
    let gw = gateway(&yaml);
    let b_target = format!("127.0.0.1:{}", b.port());
    let url = gw.admin_url(&format!("/upstreams/m/targets/{b_target}/unhealthy"));
    assert_eq!(client().post(url).send().await.unwrap().status(), 204);
    let text = client()
        .get(gw.status_url("/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let series = |target: &str, state: &str| {
        format!("kong_upstream_target_health{{upstream=\"m\",target=\"{target}\",address=\"{target}\",state=\"{state}\",subsystem=\"http\"}}")
    };
    let a_target = format!("127.0.0.1:{}", a.port());
    for (target, state, value) in [
        (&b_target, "unhealthy", 1),
        (&b_target, "healthy", 0),
        (&a_target, "healthy", 1),
        (&a_target, "healthchecks_off", 0),
    ] {
        let line = format!("{} {value}", series(target, state));
        assert!(
            text.lines().any(|l| l == line),
            "missing {line} in:\n{text}"
        );
    }
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
