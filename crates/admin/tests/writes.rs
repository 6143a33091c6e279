//! DB-less refusals of entity writes with Kong's exact bodies, 405 for unknown methods, and OPTIONS.

mod common;

use common::{client, get, sample, send, start, TestNode};
use reqwest::Method;
use serde_json::{json, Value};

fn unsupported(msg: &str) -> (u16, Value) {
    (
        405,
        json!({"code": 12, "name": "operation unsupported", "message": msg}),
    )
}

fn plain_405() -> (u16, Value) {
    (405, json!({"message": "Method not allowed"}))
}

#[tokio::test]
async fn collection_writes() {
    let s = start(TestNode::loaded(&sample(2))).await;
    let body = json!({"paths": ["/"], "service": {"id": uuid::Uuid::nil()}});
    let req = |m: Method, p: &str| client().request(m, s.admin_url(p)).json(&body);
    assert_eq!(
        send(req(Method::POST, "/routes")).await,
        unsupported("cannot create 'routes' entities when not using a database")
    );
    for m in [Method::PUT, Method::PATCH, Method::DELETE] {
        assert_eq!(send(req(m.clone(), "/routes")).await, plain_405(), "{m}");
    }
    assert_eq!(
        send(req(Method::POST, "/consumers/alice/key-auth")).await,
        unsupported("cannot create 'keyauth_credentials' entities when not using a database")
    );
    assert_eq!(
        send(req(Method::POST, "/services/nope/routes")).await,
        (404, json!({"message": "Not found"}))
    );
}

#[tokio::test]
async fn item_writes_name_the_operation_and_key() {
    let s = start(TestNode::loaded(&sample(2))).await;
    let id = uuid::Uuid::new_v4();
    let r1 = get(&s.admin_url("/routes/r1")).await.1["id"].clone();
    let r1 = r1.as_str().unwrap_or_default();
    let req = |m: Method, p: String| client().request(m, s.admin_url(&p)).json(&json!({}));
    let cases = [
        (
            Method::PUT,
            format!("/routes/{id}"),
            "cannot create or update 'routes' entities when not using a database",
        ),
        (
            Method::PATCH,
            format!("/routes/{r1}"),
            "cannot update 'routes' entities when not using a database",
        ),
        (
            Method::DELETE,
            format!("/routes/{r1}"),
            "cannot remove 'routes' entities when not using a database",
        ),
        (
            Method::PATCH,
            "/services/s1".into(),
            "cannot update 'services' entities by 'name' when not using a database",
        ),
        (
            Method::DELETE,
            "/consumers/alice".into(),
            "cannot remove 'consumers' entities by 'username' when not using a database",
        ),
        (
            Method::PATCH,
            "/routes/r1/service".into(),
            "cannot update 'services' entities when not using a database",
        ),
    ];
    for (m, path, msg) in cases {
        assert_eq!(
            send(req(m.clone(), path.clone())).await,
            unsupported(msg),
            "{m} {path}"
        );
    }
    assert_eq!(
        send(req(Method::POST, format!("/routes/{id}"))).await,
        plain_405()
    );
    // Kong's DAO looks the entity up first: PATCH of a missing one is 404, DELETE of one is 204.
    let missing = (404, json!({"message": "Not found"}));
    assert_eq!(
        send(req(Method::PATCH, format!("/routes/{id}"))).await,
        missing
    );
    assert_eq!(
        send(req(Method::PATCH, "/services/nope".into())).await,
        missing
    );
    assert_eq!(
        send(req(Method::DELETE, format!("/routes/{id}"))).await,
        (204, Value::Null)
    );
    assert_eq!(
        send(req(Method::DELETE, "/consumers/nobody".into())).await,
        (204, Value::Null)
    );
    assert_eq!(send(req(Method::POST, "/status".into())).await, plain_405());
    assert_eq!(send(req(Method::DELETE, "/".into())).await, plain_405());
    assert_eq!(send(req(Method::PUT, "/config".into())).await, plain_405());
    assert_eq!(
        send(req(Method::DELETE, "/services/nope/routes/x".into())).await,
        (404, json!({"message": "Not found"}))
    );
    // Nothing changed.
    assert_eq!(
        get(&s.admin_url("/routes")).await.1["data"]
            .as_array()
            .map(Vec::len),
        Some(2)
    );
}

#[tokio::test]
async fn options_lists_the_methods() {
    let s = start(TestNode::loaded(&sample(1))).await;
    let resp = client()
        .request(Method::OPTIONS, s.admin_url("/services"))
        .header("Origin", "http://gui.test")
        .header("Access-Control-Request-Headers", "X-Thing")
        .send()
        .await
        .expect("options");
    assert_eq!(resp.status(), 204);
    let h = resp.headers();
    assert_eq!(h["allow"], "GET, HEAD, POST, OPTIONS");
    assert_eq!(
        h["access-control-allow-methods"],
        "GET, HEAD, POST, OPTIONS"
    );
    assert_eq!(h["access-control-allow-headers"], "X-Thing");
    assert_eq!(h["access-control-allow-origin"], "http://gui.test");
    assert_eq!(h["access-control-allow-credentials"], "true");
}
