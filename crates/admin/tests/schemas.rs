//! `/schemas/...`, their `validate` variants and `/endpoints`: the shapes decK and Kong Manager read.

mod common;

use common::{client, get, start, TestNode};
use serde_json::{json, Value};

fn field<'a>(schema: &'a Value, name: &str) -> &'a Value {
    schema["fields"]
        .as_array()
        .and_then(|f| f.iter().find_map(|f| f.get(name)))
        .unwrap_or_else(|| panic!("no field {name} in {schema}"))
}

#[tokio::test]
async fn entity_and_plugin_schemas_in_kongs_shape() {
    let s = start(TestNode::new()).await;
    let (status, svc) = get(&s.admin_url("/schemas/services")).await;
    assert_eq!(status, 200);
    assert_eq!(
        field(&svc, "id"),
        &json!({"type": "string", "uuid": true, "auto": true})
    );
    assert_eq!(field(&svc, "retries")["default"], 5);
    assert_eq!(field(&svc, "protocol")["type"], "string");
    assert!(field(&svc, "protocol")["one_of"]
        .as_array()
        .unwrap()
        .contains(&json!("https")));
    assert_eq!(
        field(&svc, "client_certificate"),
        &json!({"type": "foreign", "reference": "certificates"})
    );
    let (_, routes) = get(&s.admin_url("/schemas/routes")).await;
    assert_eq!(field(&routes, "paths")["type"], "array");
    assert_eq!(field(&routes, "service")["reference"], "services");
    assert_eq!(get(&s.admin_url("/schemas/nope")).await.0, 404);

    let (status, rl) = get(&s.admin_url("/schemas/plugins/rate-limiting")).await;
    assert_eq!(status, 200);
    let config = field(&rl, "config");
    assert_eq!(config["type"], "record");
    assert_eq!(field(config, "policy")["default"], "local");
    assert_eq!(field(config, "limit_by")["default"], "consumer");
    let (_, key_auth) = get(&s.admin_url("/schemas/plugins/key-auth")).await;
    assert_eq!(
        field(&key_auth, "consumer")["eq"],
        Value::Null,
        "key-auth has no consumer scope"
    );
    assert_eq!(get(&s.admin_url("/schemas/plugins/nope")).await.0, 404);
}

#[tokio::test]
async fn validate_answers_like_a_write() {
    let s = start(TestNode::new()).await;
    let post = |path: &str, body: Value| {
        let url = s.admin_url(path);
        async move {
            let r = client().post(url).json(&body).send().await.unwrap();
            (r.status().as_u16(), r.json::<Value>().await.unwrap())
        }
    };
    let (status, ok) = post("/schemas/services/validate", json!({"host": "h"})).await;
    assert_eq!(
        (status, ok),
        (200, json!({"message": "schema validation successful"}))
    );
    let (status, bad) = post("/schemas/services/validate", json!({"port": 0})).await;
    assert_eq!(status, 400);
    assert_eq!(bad["code"], 2);
    assert!(bad["fields"]["host"].is_string(), "{bad}");
    let (status, bad) = post(
        "/schemas/plugins/validate",
        json!({"name": "rate-limiting", "config": {"minute": "x"}}),
    )
    .await;
    assert_eq!(status, 400);
    assert!(bad["fields"]["config"]["minute"].is_string(), "{bad}");
}

#[tokio::test]
async fn endpoints_lists_every_path() {
    let s = start(TestNode::new()).await;
    let (status, body) = get(&s.admin_url("/endpoints")).await;
    assert_eq!(status, 200);
    let data: Vec<&str> = body["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for path in [
        "/services",
        "/services/{services}/routes",
        "/consumers/{consumers}/key-auth",
        "/schemas/plugins/{name}",
    ] {
        assert!(data.contains(&path), "{path} missing from {data:?}");
    }
}
