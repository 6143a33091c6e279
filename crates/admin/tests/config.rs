//! `POST /config` in every body shape, its errors, `check_hash`, `flatten_errors`, 429 and 413, and
//! `GET /config`.

mod common;

use common::{client, get, sample, send, start, TestNode, TOO_LARGE};
use serde_json::{json, Value};

const BOB: &str = "_format_version: \"3.0\"\nconsumers:\n- username: bobby\n";

async fn post(url: &str, content_type: &str, body: impl Into<reqwest::Body>) -> (u16, Value) {
    send(
        client()
            .post(url)
            .header("content-type", content_type)
            .body(body),
    )
    .await
}

async fn consumers(s: &common::Servers) -> Vec<String> {
    get(&s.admin_url("/consumers")).await.1["data"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["username"].as_str().map(String::from))
        .collect()
}

#[tokio::test]
async fn loads_yaml_json_and_form_bodies() {
    let s = start(TestNode::new()).await;
    let url = s.admin_url("/config");
    let (status, body) = post(&url, "application/x-yaml", BOB).await;
    assert_eq!(status, 201, "{body}");
    let bobby = body["consumers"]
        .as_object()
        .and_then(|m| m.values().next())
        .cloned();
    assert_eq!(bobby.map(|c| c["username"].clone()), Some(json!("bobby")));
    assert_eq!(consumers(&s).await, vec!["bobby"]);

    let doc = json!({"_format_version": "3.0", "consumers": [{"username": "json-body"}]});
    assert_eq!(send(client().post(&url).json(&doc)).await.0, 201);
    assert_eq!(consumers(&s).await, vec!["json-body"]);

    let wrapped =
        json!({"config": "_format_version: \"3.0\"\nconsumers:\n- username: under-config\n"});
    assert_eq!(send(client().post(&url).json(&wrapped)).await.0, 201);
    assert_eq!(consumers(&s).await, vec!["under-config"]);

    let form = [(
        "config",
        "_format_version: \"3.0\"\nconsumers:\n- username: formed\n",
    )];
    assert_eq!(send(client().post(&url).form(&form)).await.0, 201);
    assert_eq!(consumers(&s).await, vec!["formed"]);

    let multipart = "--BOUND\r\nContent-Disposition: form-data; name=\"config\"; filename=\"kong.yml\"\r\n\
                     Content-Type: application/x-yaml\r\n\r\n_format_version: \"3.0\"\nconsumers:\n- username: multi\n\r\n--BOUND--\r\n";
    let (status, _) = post(&url, "multipart/form-data; boundary=BOUND", multipart).await;
    assert_eq!(status, 201);
    assert_eq!(consumers(&s).await, vec!["multi"]);
}

#[tokio::test]
async fn unparsable_and_empty_bodies() {
    let s = start(TestNode::new()).await;
    let url = s.admin_url("/config");
    let (status, body) = send(client().post(&url).json(&json!({"config": "bobby tables"}))).await;
    assert_eq!(status, 400);
    assert_eq!(
        body,
        json!({
            "code": 14,
            "name": "invalid declarative configuration",
            "message": "declarative config is invalid: {error=\"failed parsing declarative configuration: expected an object\"}",
            "fields": {"error": "failed parsing declarative configuration: expected an object"},
        })
    );
    let (status, body) = post(&url, "application/json", "{\"_format_version\": ").await;
    assert_eq!((status, &body["code"]), (400, &json!(14)));
    assert!(body["fields"]["error"]
        .as_str()
        .is_some_and(|e| e.starts_with("failed parsing declarative configuration")));
    assert_eq!(
        post(&url, "application/json", "").await,
        (
            400,
            json!({"message": "expected a declarative configuration"})
        )
    );
    assert_eq!(
        get(&s.status_url("/status/ready")).await.0,
        503,
        "nothing was loaded"
    );
}

#[tokio::test]
async fn invalid_config_reports_fields_and_flattened_errors() {
    let s = start(TestNode::loaded(BOB)).await;
    let bad = "_format_version: \"3.0\"\nservices:\n- name: broken\n  port: 99999999\n  host: example.test\n";
    let (status, body) = post(&s.admin_url("/config"), "application/x-yaml", bad).await;
    assert_eq!(
        (status, &body["code"], &body["name"]),
        (400, &json!(14), &json!("invalid declarative configuration"))
    );
    assert!(body["fields"]["services"][0]["port"].is_string(), "{body}");
    assert!(body["message"]
        .as_str()
        .is_some_and(|m| m.starts_with("declarative config is invalid: ")));
    assert!(body.get("flattened_errors").is_none());

    let (status, flat) = post(
        &s.admin_url("/config?flatten_errors=1"),
        "application/x-yaml",
        bad,
    )
    .await;
    assert_eq!(status, 400);
    let first = &flat["flattened_errors"][0];
    assert_eq!(
        (&first["entity_type"], &first["entity_name"]),
        (&json!("service"), &json!("broken"))
    );
    assert_eq!(first["errors"][0]["field"], "port");
    assert_eq!(
        consumers(&s).await,
        vec!["bobby"],
        "the live config is untouched"
    );
}

#[tokio::test]
async fn check_hash_answers_304_when_unchanged() {
    let s = start(TestNode::new()).await;
    let url = s.admin_url("/config?check_hash=1");
    assert_eq!(post(&url, "application/x-yaml", BOB).await.0, 201);
    let resp = client().post(&url).body(BOB).send().await.expect("post");
    assert_eq!(resp.status(), 304);
    assert_eq!(resp.bytes().await.expect("body").len(), 0);
    assert_eq!(
        post(&s.admin_url("/config"), "application/x-yaml", BOB)
            .await
            .0,
        201,
        "no check_hash"
    );
    let changed = BOB.replace("bobby", "robert");
    assert_eq!(post(&url, "application/x-yaml", changed).await.0, 201);
}

#[tokio::test]
async fn busy_and_too_large() {
    let node = TestNode::with_limit(2);
    let s = start(node.clone()).await;
    let url = s.admin_url("/config");
    let running = node.gate.clone().lock_owned().await;
    let resp = client().post(&url).body(BOB).send().await.expect("post");
    assert_eq!(resp.status(), 429);
    assert!(resp.headers().contains_key("retry-after"));
    assert_eq!(
        resp.json::<Value>().await.ok(),
        Some(json!({"message": "Currently loading previous configuration"}))
    );
    drop(running);
    assert_eq!(post(&url, "application/x-yaml", BOB).await.0, 201);
    assert_eq!(
        post(&url, "application/x-yaml", sample(3)).await,
        (413, json!({"message": TOO_LARGE}))
    );
}

#[tokio::test]
async fn get_config_exports_what_post_loaded() {
    let s = start(TestNode::new()).await;
    assert_eq!(
        post(&s.admin_url("/config"), "application/x-yaml", sample(2))
            .await
            .0,
        201
    );
    let (status, body) = get(&s.admin_url("/config")).await;
    assert_eq!(status, 200);
    let yaml = body["config"].as_str().unwrap_or_default().to_string();
    assert!(yaml.contains("_format_version"), "{yaml}");
    let before = get(&s.admin_url("/services")).await.1;
    assert_eq!(
        post(&s.admin_url("/config"), "application/x-yaml", yaml)
            .await
            .0,
        201
    );
    assert_eq!(
        get(&s.admin_url("/services")).await.1,
        before,
        "export → load keeps entities and ids"
    );
}
