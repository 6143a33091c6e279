//! `/status`, `/status/ready`, `/status/dns`, `/metrics`, `GET /`, `/plugins/enabled`, and the headers on every response.

mod common;

use common::{client, get, start, TestNode};
use serde_json::json;

#[tokio::test]
async fn ready_turns_200_after_the_first_load() {
    let s = start(TestNode::new()).await;
    assert_eq!(
        get(&s.status_url("/status/ready")).await,
        (
            503,
            json!({"message": "no configuration available (configuration hash is not initialized)"})
        )
    );
    let (status, before) = get(&s.status_url("/status")).await;
    assert_eq!(status, 200);
    assert_eq!(
        before["configuration_hash"],
        "00000000000000000000000000000000"
    );
    // DB-less: no `database` (Kong's health.lua drops it); `memory` in Kong's shape.
    assert_eq!(before.get("database"), None, "{before}");
    assert_eq!(
        before["memory"]["workers_lua_vms"][0]["pid"],
        std::process::id()
    );
    assert_eq!(before["memory"]["lua_shared_dicts"], json!({}));
    assert_eq!(before["server"]["connections_active"], 1);

    let body = "_format_version: \"3.0\"\nconsumers:\n- username: x\n";
    let resp = client()
        .post(s.admin_url("/config"))
        .body(body)
        .send()
        .await
        .expect("post");
    assert_eq!(resp.status(), 201);
    assert_eq!(
        get(&s.status_url("/status/ready")).await,
        (200, json!({"message": "ready"}))
    );
    let after = get(&s.admin_url("/status")).await.1;
    let hash = after["configuration_hash"].as_str().unwrap_or_default();
    assert_eq!(hash.len(), 32);
    assert_ne!(hash, "00000000000000000000000000000000");
    assert_eq!(
        get(&s.status_url("/status")).await.1["configuration_hash"],
        hash
    );
}

#[tokio::test]
async fn status_listener_serves_only_its_paths() {
    let s = start(TestNode::new()).await;
    for path in ["/", "/services", "/config"] {
        assert_eq!(
            get(&s.status_url(path)).await,
            (404, json!({"message": "Not found"})),
            "{path}"
        );
    }
    assert_eq!(get(&s.admin_url("/status/ready")).await.0, 404);
}

#[tokio::test]
async fn metrics_come_from_the_node() {
    let s = start(TestNode::new()).await;
    for url in [s.status_url("/metrics"), s.admin_url("/metrics")] {
        let resp = client().get(&url).send().await.expect("metrics");
        assert_eq!(resp.status(), 200);
        assert!(resp.headers()["content-type"]
            .to_str()
            .is_ok_and(|t| t.starts_with("text/plain")));
        assert!(
            resp.text()
                .await
                .is_ok_and(|t| t.contains("test_config_loads 0")),
            "{url}"
        );
    }
}

#[tokio::test]
async fn root_and_plugins_enabled() {
    let s = start(TestNode::loaded(&common::sample(1))).await;
    let (status, root) = get(&s.admin_url("/")).await;
    assert_eq!(status, 200);
    assert_eq!(root["version"], "3.9.0");
    assert_eq!(root["hostname"], "test-host");
    assert_eq!(root["node_id"], uuid::Uuid::from_u128(7).to_string());
    assert_eq!(root["configuration"]["pg_password"], "******");
    let available = &root["plugins"]["available_on_server"];
    assert!(available["key-auth"]["priority"].is_i64(), "{available}");
    assert_eq!(
        root["plugins"]["enabled_in_cluster"],
        json!(["key-auth", "request-termination"])
    );
    let (_, enabled) = get(&s.admin_url("/plugins/enabled")).await;
    let names = enabled["enabled_plugins"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(
        names.contains(&json!("key-auth")) && names.contains(&json!("rate-limiting")),
        "{enabled}"
    );
}

#[tokio::test]
async fn every_response_carries_kongs_headers() {
    let s = start(TestNode::new()).await;
    for url in [
        s.admin_url("/"),
        s.admin_url("/nope"),
        s.status_url("/status"),
    ] {
        let resp = client().get(&url).send().await.expect("get");
        let h = resp.headers();
        assert!(
            h["x-kong-admin-latency"]
                .to_str()
                .is_ok_and(|v| v.parse::<u64>().is_ok()),
            "{url}"
        );
        assert_eq!(
            h["content-type"], "application/json; charset=utf-8",
            "{url}"
        );
        assert_eq!(h["access-control-allow-origin"], "*", "{url}");
        assert!(h["server"].to_str().is_ok_and(|v| v.starts_with("sluice/")));
    }
}

#[tokio::test]
async fn head_is_answered_like_get_without_a_body() {
    let s = start(TestNode::loaded(&common::sample(1))).await;
    let resp = client()
        .head(s.admin_url("/services"))
        .send()
        .await
        .expect("head");
    assert_eq!(resp.status(), 200);
    assert_eq!(
        resp.headers()["content-type"],
        "application/json; charset=utf-8"
    );
    assert!(resp.bytes().await.expect("body").is_empty());
}

#[tokio::test]
async fn status_dns_answers_as_kongs_default_dns_client_does() {
    // Kong 3.x answers 501 unless `new_dns_client` is on (its default is off).
    let s = start(TestNode::new()).await;
    for url in [s.admin_url("/status/dns"), s.status_url("/status/dns")] {
        assert_eq!(
            get(&url).await,
            (
                501,
                json!({"message": "not implemented with the legacy DNS client"})
            ),
            "{url}"
        );
    }
}

/// A node with a database reports whether it reaches it (Kong's `database.reachable`).
#[tokio::test]
async fn status_reports_the_database_only_in_db_mode() {
    let s = start(TestNode::database()).await;
    let (status, body) = get(&s.admin_url("/status")).await;
    assert_eq!(status, 200);
    assert_eq!(body["database"], json!({"reachable": true}), "{body}");
}
