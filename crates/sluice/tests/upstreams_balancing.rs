//! The real binary balancing over real upstreams with each of Kong's algorithms: weighted round-robin,
//! consistent hashing (header, consumer and cookie; stability when a target is removed), least-connections, latency.

mod support;

use sluice_testkit::{EchoUpstream, FlakyUpstream, Gateway, Mode};
use std::collections::HashMap;
use std::time::Duration;
use support::{gateway, hit, reload};

fn upstream_yaml(name: &str, extra: &str, targets: &[u16]) -> String {
    let targets: Vec<String> = targets
        .iter()
        .map(|p| format!("{{target: \"127.0.0.1:{p}\"}}"))
        .collect();
    format!(
        "- name: {name}\n  {extra}\n  targets: [{}]\n",
        targets.join(", ")
    )
}

fn config(upstreams: &[String]) -> String {
    let mut yaml = String::from("_format_version: \"3.0\"\nservices:\n");
    for (i, u) in upstreams.iter().enumerate() {
        let name = u.trim_start_matches("- name: ").split('\n').next().unwrap();
        yaml.push_str(&format!(
            "- {{name: s{i}, host: {name}, retries: 0, routes: [{{paths: [/{name}]}}]}}\n"
        ));
    }
    yaml.push_str("upstreams:\n");
    for u in upstreams {
        yaml.push_str(u);
    }
    yaml
}

/// `n` echo upstreams named `<prefix>0`, `<prefix>1`, ... (kept alive by the caller), and their ports.
fn echo_upstreams(prefix: &str, n: usize) -> (Vec<EchoUpstream>, Vec<u16>) {
    let ups: Vec<EchoUpstream> = (0..n)
        .map(|i| EchoUpstream::named(&format!("{prefix}{i}")))
        .collect();
    let ports = ups.iter().map(EchoUpstream::port).collect();
    (ups, ports)
}

/// The target a request with `header` is proxied to, the same for three requests in a row.
async fn sticky_target(gw: &Gateway, path: &str, header: (&str, &str)) -> String {
    let (status, first) = hit(gw, path, &[header]).await;
    assert_eq!(status, 200);
    for _ in 0..2 {
        assert_eq!(hit(gw, path, &[header]).await.1, first, "{header:?} moved");
    }
    first
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consistent_hashing_is_sticky_spread_and_stable_when_a_target_goes() {
    let (_ups, ports) = echo_upstreams("t", 4);
    let hashing = "algorithm: consistent-hashing\n  hash_on: header\n  hash_on_header: x-user";
    let gw = gateway(&config(&[upstream_yaml("h", hashing, &ports)]));
    let mut before = HashMap::new();
    for user in 0..200 {
        let u = format!("user-{user}");
        let first = sticky_target(&gw, "/h", ("x-user", &u)).await;
        before.insert(u, first);
    }
    // Spread: each of 4 equal targets gets a fair share of 200 keys (expected 50).
    for i in 0..4 {
        let n = before.values().filter(|t| **t == format!("t{i}")).count();
        assert!((25..=80).contains(&n), "t{i} got {n} of 200 keys");
    }
    // Remove t3: keys of t0..t2 stay where they were, only t3's keys move.
    reload(&gw, &config(&[upstream_yaml("h", hashing, &ports[..3])])).await;
    let mut moved = 0;
    for (u, was) in &before {
        let (status, now) = hit(&gw, "/h", &[("x-user", u)]).await;
        assert_eq!(status, 200);
        if was == "t3" {
            assert_ne!(&now, "t3");
            moved += 1;
        } else {
            assert_eq!(&now, was, "{u} moved although its target stayed");
        }
    }
    eprintln!("consistent hashing: {moved} of 200 keys remapped after removing 1 of 4 targets");
}

/// `hash_on: consumer` hashes the id key-auth found (formatted only for a hashing balancer): each
/// consumer sticks to one target, and the consumers spread over them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hashing_on_the_consumer_sticks_each_to_one_target() {
    let (_ups, ports) = echo_upstreams("k", 4);
    let mut yaml = config(&[upstream_yaml(
        "k",
        "algorithm: consistent-hashing\n  hash_on: consumer",
        &ports,
    )]);
    yaml.push_str("plugins:\n- {name: key-auth}\nconsumers:\n");
    for c in 0..40 {
        yaml.push_str(&format!(
            "- {{username: c{c}, keyauth_credentials: [{{key: key-{c}}}]}}\n"
        ));
    }
    let gw = gateway(&yaml);
    let mut seen = HashMap::new();
    for c in 0..40 {
        let first = sticky_target(&gw, "/k", ("apikey", &format!("key-{c}"))).await;
        *seen.entry(first).or_insert(0) += 1;
    }
    assert!(seen.len() >= 3, "40 consumers over 4 targets: {seen:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hashing_on_a_cookie_sets_it_once_and_then_sticks() {
    let (_ups, ports) = echo_upstreams("c", 3);
    let extra = "algorithm: consistent-hashing\n  hash_on: cookie\n  hash_on_cookie: sticky\n  hash_on_cookie_path: /c";
    let gw = gateway(&config(&[upstream_yaml("c", extra, &ports)]));
    let mut seen = HashMap::new();
    for _ in 0..20 {
        let resp = sluice_testkit::client()
            .get(gw.proxy_url("/c"))
            .send()
            .await
            .unwrap();
        let cookie = resp.headers()["set-cookie"].to_str().unwrap().to_string();
        assert!(
            cookie.starts_with("sticky=") && cookie.ends_with("; Path=/c"),
            "{cookie}"
        );
        let value = cookie.split(';').next().unwrap().to_string();
        let first: serde_json::Value = resp.json().await.unwrap();
        let first = first["upstream"].as_str().unwrap().to_string();
        for _ in 0..3 {
            let resp = sluice_testkit::client()
                .get(gw.proxy_url("/c"))
                .header("cookie", &value)
                .send()
                .await
                .unwrap();
            assert!(resp.headers().get("set-cookie").is_none());
            let body: serde_json::Value = resp.json().await.unwrap();
            assert_eq!(body["upstream"].as_str().unwrap(), first);
        }
        *seen.entry(first).or_insert(0) += 1;
    }
    assert!(
        seen.len() >= 2,
        "20 new clients all on one target: {seen:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn least_connections_spreads_concurrent_load_by_weight() {
    let ups: Vec<EchoUpstream> = (0..3)
        .map(|i| EchoUpstream::named(&format!("l{i}")))
        .collect();
    let targets = format!(
        "algorithm: least-connections\n  targets: [{{target: \"127.0.0.1:{}\", weight: 100}}, {{target: \"127.0.0.1:{}\", weight: 100}}, {{target: \"127.0.0.1:{}\", weight: 200}}]",
        ups[0].port(),
        ups[1].port(),
        ups[2].port()
    );
    let yaml = format!(
        "_format_version: \"3.0\"\nservices:\n- {{name: s, host: l, routes: [{{paths: [/l]}}]}}\nupstreams:\n- name: l\n  {targets}\n"
    );
    let gw = gateway(&yaml);
    // 8 clients, each request held 40 ms upstream: the in-flight counts steer the picks.
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let url = gw.proxy_url("/l");
        tasks.push(tokio::spawn(async move {
            for _ in 0..25 {
                let resp = sluice_testkit::client()
                    .get(&url)
                    .header("x-echo-delay-ms", "40")
                    .send()
                    .await
                    .unwrap();
                assert_eq!(resp.status(), 200);
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let counts: Vec<u64> = ups.iter().map(EchoUpstream::requests).collect();
    eprintln!("least-connections 100/100/200 over 200 requests: {counts:?}");
    assert_eq!(counts.iter().sum::<u64>(), 200);
    // Expected 50/50/100; the heavy target must get clearly more than each light one.
    assert!(counts[2] >= 70 && counts[2] <= 140, "{counts:?}");
    assert!(counts[0] >= 25 && counts[1] >= 25, "{counts:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn latency_sends_traffic_away_from_a_slow_target() {
    let fast: Vec<EchoUpstream> = (0..2)
        .map(|i| EchoUpstream::named(&format!("f{i}")))
        .collect();
    let slow = FlakyUpstream::start("slow");
    slow.set(Mode::SlowHeaders(Duration::from_millis(60)));
    let ports = [fast[0].port(), fast[1].port(), slow.port()];
    let gw = gateway(&config(&[upstream_yaml(
        "lat",
        "algorithm: latency",
        &ports,
    )]));
    for _ in 0..100 {
        assert_eq!(hit(&gw, "/lat", &[]).await.0, 200);
    }
    let counts = (fast[0].requests(), fast[1].requests(), slow.requests());
    eprintln!("latency (fast, fast, 60 ms slow) over 100 requests: {counts:?}");
    assert!(slow.requests() <= 5, "{counts:?}");
    assert!(
        fast[0].requests() >= 10 && fast[1].requests() >= 10,
        "{counts:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn round_robin_split_is_exact_across_two_workers() {
    let ups: Vec<EchoUpstream> = (0..3)
        .map(|i| EchoUpstream::named(&format!("r{i}")))
        .collect();
    let yaml = format!(
        "_format_version: \"3.0\"\nservices:\n- {{name: s, host: rr, routes: [{{paths: [/rr]}}]}}\nupstreams:\n- name: rr\n  targets: [{{target: \"127.0.0.1:{}\", weight: 50}}, {{target: \"127.0.0.1:{}\", weight: 25}}, {{target: \"127.0.0.1:{}\", weight: 25}}]\n",
        ups[0].port(),
        ups[1].port(),
        ups[2].port()
    );
    let gw = gateway(&yaml);
    for _ in 0..400 {
        assert_eq!(hit(&gw, "/rr", &[]).await.0, 200);
    }
    let counts: Vec<u64> = ups.iter().map(EchoUpstream::requests).collect();
    assert_eq!(counts, vec![200, 100, 100]);
}
