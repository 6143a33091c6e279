//! Passive health checks and the Admin API on the real binary, with upstreams that fail in each way (500s,
//! accept-then-reset, slow headers, closed port): targets taken out and put back, Kong's health endpoints and
//! metric, retries landing on a healthy target. Active checks and reloads are in `upstreams_active.rs`.

mod support;

use serde_json::Value;
use sluice_testkit::{client, closed_port, EchoUpstream, FlakyUpstream, Mode};
use std::time::Duration;
use support::{doc, gateway, health, health_of, hit, service, PASSIVE};

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
    let body: Value = sluice_testkit::get_json(&gw.admin_url("/upstreams/on/health"), &[])
        .await
        .2;
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
    let overall: Value =
        sluice_testkit::get_json(&gw.admin_url("/upstreams/on/health?balancer_health=1"), &[])
            .await
            .2;
    assert_eq!(overall["data"]["health"], "UNHEALTHY", "{overall}");
    // Kong's balancer status beside it: the verdict, the weights, each host with its addresses.
    let data = &overall["data"];
    assert_eq!(data["balancer_health"], "UNHEALTHY", "{overall}");
    assert_eq!(data["details"]["healthy"], false, "{overall}");
    assert_eq!(data["details"]["weight"]["available"], 0, "{overall}");
    let hosts = data["details"]["hosts"].as_array().expect("hosts");
    assert_eq!(hosts.len(), 2, "{overall}");
    assert_eq!(hosts[0]["host"], "127.0.0.1", "{overall}");
    assert_eq!(hosts[0]["addresses"][0]["healthy"], false, "{overall}");
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
