//! The real `sluice` binary in front of a real upstream: routing, reloads, signals.

use serde_json::Value;
use sluice_testkit::{client, EchoUpstream, Gateway, LoadLoop};
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_sluice");

fn config(upstream_port: u16, route_path: &str) -> String {
    format!(
        r#"_format_version: "3.0"
services:
- name: echo
  url: http://127.0.0.1:{upstream_port}/base
  routes:
  - name: main
    paths: ["{route_path}"]
"#
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proxies_a_request_with_kong_headers() {
    let upstream = EchoUpstream::start();
    let gw = Gateway::builder(BIN)
        .config_yaml(&config(upstream.port(), "/api"))
        .start();
    let resp = client()
        .get(gw.proxy_url("/api/items?x=1&y=%20"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    for h in [
        "via",
        "x-kong-upstream-latency",
        "x-kong-proxy-latency",
        "x-kong-request-id",
    ] {
        assert!(
            resp.headers().contains_key(h),
            "missing response header {h}: {:?}",
            resp.headers()
        );
    }
    let echo: Value = resp.json().await.unwrap();
    assert_eq!(echo["path"], "/base/items");
    assert_eq!(echo["query"], "x=1&y=%20");
    assert_eq!(echo["headers"]["x-forwarded-for"], "127.0.0.1");
    assert_eq!(echo["headers"]["x-forwarded-proto"], "http");
    assert_eq!(echo["headers"]["x-forwarded-prefix"], "/api");
    assert_eq!(echo["headers"]["x-real-ip"], "127.0.0.1");
    assert_eq!(
        echo["headers"]["host"],
        format!("127.0.0.1:{}", upstream.port())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unmatched_request_gets_kongs_404() {
    let upstream = EchoUpstream::start();
    let gw = Gateway::builder(BIN)
        .config_yaml(&config(upstream.port(), "/api"))
        .start();
    let resp = client()
        .get(gw.proxy_url("/elsewhere"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 404);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["message"], "no Route matched with those values");
    assert!(body["request_id"].as_str().is_some_and(|s| !s.is_empty()));
    assert_eq!(upstream.requests(), 0);
}

/// 50 reloads through `POST /config` (valid ones alternating, invalid ones in between) while a load loop runs:
/// not one request may fail, and every invalid config is refused with code 14.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reloads_under_load_lose_no_request() {
    let upstream = EchoUpstream::start();
    let gw = Gateway::builder(BIN)
        .config_yaml(&config(upstream.port(), "/api"))
        .start();
    let load = LoadLoop::start(&gw.proxy_url("/api/load"), 8);
    let http = client();
    for i in 0..50 {
        let good = if i % 2 == 0 { "/api" } else { "/" };
        let resp = http
            .post(gw.admin_url("/config"))
            .header("content-type", "application/x-yaml")
            .body(config(upstream.port(), good))
            .send()
            .await
            .unwrap();
        assert_eq!(
            resp.status(),
            201,
            "reload {i}: {}",
            resp.text().await.unwrap()
        );
        let bad = http
            .post(gw.admin_url("/config"))
            .header("content-type", "application/json")
            .body(r#"{"_format_version":"3.0","services":[{"name":"x","port":"nope"}]}"#)
            .send()
            .await
            .unwrap();
        assert_eq!(bad.status(), 400);
        let body: Value = bad.json().await.unwrap();
        assert_eq!(body["code"], 14);
        assert_eq!(body["name"], "invalid declarative configuration");
    }
    let stats = load.stop();
    assert_eq!(stats.failed, 0, "{stats:?}");
    assert!(stats.ok > 50, "the load loop barely ran: {stats:?}");
    assert_eq!(
        stats.statuses.keys().copied().collect::<Vec<_>>(),
        vec![200],
        "{stats:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sighup_rereads_the_file_and_keeps_the_old_config_on_error() {
    let upstream = EchoUpstream::start();
    let gw = Gateway::builder(BIN)
        .config_yaml(&config(upstream.port(), "/old"))
        .start();
    let file = gw.prefix().join("kong.yml");
    let http = client();
    assert_eq!(
        http.get(gw.proxy_url("/old"))
            .send()
            .await
            .unwrap()
            .status(),
        200
    );

    std::fs::write(&file, config(upstream.port(), "/new")).unwrap();
    gw.signal("HUP");
    let mut status = 0;
    for _ in 0..100 {
        status = http
            .get(gw.proxy_url("/new"))
            .send()
            .await
            .unwrap()
            .status()
            .as_u16();
        if status == 200 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(status, 200, "the new route never went live:\n{}", gw.log());
    assert_eq!(
        http.get(gw.proxy_url("/old"))
            .send()
            .await
            .unwrap()
            .status(),
        404
    );

    std::fs::write(
        &file,
        "_format_version: \"3.0\"\nservices: [{name: broken}]\n",
    )
    .unwrap();
    gw.signal("HUP");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        http.get(gw.proxy_url("/new"))
            .send()
            .await
            .unwrap()
            .status(),
        200
    );
    assert!(
        gw.log().contains("keeping the old configuration"),
        "{}",
        gw.log()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_drains_in_flight_requests_and_exits_zero() {
    let upstream = EchoUpstream::start();
    let mut gw = Gateway::builder(BIN)
        .config_yaml(&config(upstream.port(), "/api"))
        .start();
    let url = gw.proxy_url("/api/slow");
    let slow = tokio::spawn(async move {
        client()
            .get(url)
            .header("x-echo-delay-ms", "800")
            .send()
            .await
            .map(|r| r.status().as_u16())
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    gw.signal("TERM");
    assert_eq!(slow.await.unwrap().unwrap(), 200);
    let status = gw
        .wait_exit(Duration::from_secs(10))
        .expect("sluice did not exit after SIGTERM");
    assert!(status.success(), "exit status {status:?}\n{}", gw.log());
}
