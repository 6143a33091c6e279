//! Entity reads over real sockets: collections, items by id and endpoint key, nested and owner paths,
//! pagination, tags filters, and the errors Kong gives for bad list options.

mod common;

use common::{get, sample, start, TestNode};
use serde_json::{json, Value};

fn strs(body: &Value, field: &str) -> Vec<String> {
    body["data"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| e[field].as_str().unwrap_or("?").to_string())
        .collect()
}

#[tokio::test]
async fn every_collection_lists_its_entities() {
    let s = start(TestNode::loaded(&sample(3))).await;
    let counts = [
        ("/services", 3),
        ("/routes", 3),
        ("/consumers", 2),
        ("/plugins", 2),
        ("/upstreams", 1),
        ("/key-auths", 1),
        ("/basic-auths", 1),
        ("/acls", 1),
        ("/certificates", 1),
        ("/snis", 1),
        ("/ca_certificates", 0),
    ];
    for (path, n) in counts {
        let (status, body) = get(&s.admin_url(path)).await;
        assert_eq!(status, 200, "{path}");
        assert_eq!(
            body["data"].as_array().map(Vec::len),
            Some(n),
            "{path}: {body}"
        );
        assert_eq!(body["next"], Value::Null, "{path}");
    }
    let (status, body) = get(&s.admin_url("/targets")).await;
    assert_eq!((status, body), (404, json!({"message": "Not found"})));
}

#[tokio::test]
async fn items_by_id_and_endpoint_key() {
    let s = start(TestNode::loaded(&sample(3))).await;
    let (status, svc) = get(&s.admin_url("/services/s1")).await;
    assert_eq!(status, 200);
    assert_eq!(
        (svc["host"].as_str(), svc["path"].as_str()),
        (Some("127.0.0.1"), Some("/1"))
    );
    let id = svc["id"].as_str().unwrap_or_default().to_string();
    assert_eq!(
        get(&s.admin_url(&format!("/services/{id}"))).await,
        (200, svc.clone())
    );
    for (path, field, want) in [
        ("/routes/r2", "name", "r2"),
        ("/consumers/alice", "custom_id", "a-1"),
        ("/key-auths/alice-key", "key", "alice-key"),
        ("/basic-auths/alice-basic", "username", "alice-basic"),
        ("/plugins/global-auth", "name", "key-auth"),
        ("/snis/example.test", "name", "example.test"),
        ("/upstreams/backend", "name", "backend"),
    ] {
        let (status, body) = get(&s.admin_url(path)).await;
        assert_eq!((status, body[field].as_str()), (200, Some(want)), "{path}");
    }
    let (status, sni) = get(&s.admin_url("/snis/%65xample.test")).await;
    assert_eq!(
        (status, sni["name"].as_str()),
        (200, Some("example.test")),
        "percent-decoded"
    );
    let basic = get(&s.admin_url("/basic-auths/alice-basic")).await.1;
    assert_ne!(basic["password"], "pw", "passwords are served hashed");
    let missing = (404, json!({"message": "Not found"}));
    assert_eq!(get(&s.admin_url("/services/nope")).await, missing);
    assert_eq!(
        get(&s.admin_url(&format!("/services/{}", uuid::Uuid::nil()))).await,
        missing
    );
    assert_eq!(
        get(&s.admin_url("/consumers/a-1")).await,
        missing,
        "custom_id is not an endpoint key"
    );
    assert_eq!(get(&s.admin_url("/nowhere")).await, missing);
}

#[tokio::test]
async fn nested_collections_and_owners() {
    let s = start(TestNode::loaded(&sample(3))).await;
    let s1 = get(&s.admin_url("/services/s1")).await.1;
    let (_, routes) = get(&s.admin_url("/services/s1/routes")).await;
    assert_eq!(strs(&routes, "name"), vec!["r1"]);
    assert_eq!(routes["data"][0]["service"], json!({"id": s1["id"]}));
    assert_eq!(get(&s.admin_url("/routes/r1/service")).await, (200, s1));
    let (_, plugins) = get(&s.admin_url("/services/s2/plugins")).await;
    assert_eq!(strs(&plugins, "name"), vec!["request-termination"]);
    assert_eq!(
        strs(&get(&s.admin_url("/services/s0/plugins")).await.1, "name"),
        Vec::<String>::new()
    );
    for (path, field, want) in [
        ("/consumers/alice/key-auth", "key", "alice-key"),
        ("/consumers/alice/basic-auth", "username", "alice-basic"),
        ("/consumers/alice/acls", "group", "admins"),
        ("/certificates/{cert}/snis", "name", "example.test"),
    ] {
        let cert = get(&s.admin_url("/certificates")).await.1["data"][0]["id"].clone();
        let path = path.replace("{cert}", cert.as_str().unwrap_or_default());
        assert_eq!(
            strs(&get(&s.admin_url(&path)).await.1, field),
            vec![want],
            "{path}"
        );
    }
    // Kong's `/certificates/{sni}`: the certificate by one of its SNI names.
    let (status, by_name) = get(&s.admin_url("/certificates/example.test")).await;
    let cert = get(&s.admin_url("/certificates")).await.1["data"][0].clone();
    assert_eq!((status, by_name), (200, cert));
    assert_eq!(get(&s.admin_url("/certificates/other.test")).await.0, 404);
    assert_eq!(
        strs(&get(&s.admin_url("/consumers/bob/key-auth")).await.1, "key"),
        Vec::<String>::new()
    );
    let (_, targets) = get(&s.admin_url("/upstreams/backend/targets")).await;
    assert_eq!(strs(&targets, "target"), vec!["10.0.0.1:80", "10.0.0.2:80"]);
    assert_eq!(
        get(&s.admin_url("/upstreams/backend/targets/all")).await.1["data"],
        targets["data"]
    );
    let (status, t) = get(&s.admin_url("/upstreams/backend/targets/10.0.0.2:80")).await;
    assert_eq!((status, t["weight"].as_u64()), (200, Some(50)));
    let (_, owner) = get(&s.admin_url("/key-auths/alice-key/consumer")).await;
    assert_eq!(owner["username"], "alice");
    let missing = (404, json!({"message": "Not found"}));
    assert_eq!(get(&s.admin_url("/services/nope/routes")).await, missing);
    assert_eq!(
        get(&s.admin_url("/services/s1/routes/r2")).await,
        missing,
        "r2 is not under s1"
    );
    assert_eq!(
        get(&s.admin_url("/plugins/global-auth/service")).await,
        missing,
        "global plugin"
    );
}

#[tokio::test]
async fn pagination_walks_250_services_in_three_pages() {
    let s = start(TestNode::loaded(&sample(250))).await;
    let mut url = s.admin_url("/services");
    let mut seen = Vec::new();
    let mut sizes = Vec::new();
    loop {
        let (status, body) = get(&url).await;
        assert_eq!(status, 200);
        sizes.push(body["data"].as_array().map_or(0, Vec::len));
        seen.extend(strs(&body, "name"));
        match body["next"].as_str() {
            Some(next) => {
                assert!(next.starts_with("/services?offset="), "{next}");
                assert!(body["offset"].is_string());
                url = s.admin_url(next);
            }
            None => {
                assert_eq!(body["next"], Value::Null);
                assert!(body.get("offset").is_none());
                break;
            }
        }
    }
    assert_eq!(sizes, vec![100, 100, 50]);
    assert_eq!(seen, (0..250).map(|i| format!("s{i}")).collect::<Vec<_>>());
    let (_, small) = get(&s.admin_url("/routes?size=7")).await;
    assert_eq!(small["data"].as_array().map(Vec::len), Some(7));
    assert!(small["next"]
        .as_str()
        .is_some_and(|n| n.ends_with("&size=7")));
}

#[tokio::test]
async fn invalid_size_and_offset_are_kong_errors() {
    let s = start(TestNode::loaded(&sample(2))).await;
    for size in ["0", "1001", "x"] {
        let (status, body) = get(&s.admin_url(&format!("/services?size={size}"))).await;
        assert_eq!(
            (status, &body["code"], &body["name"]),
            (400, &json!(9), &json!("invalid size")),
            "{size}"
        );
    }
    let (status, body) = get(&s.admin_url("/routes?offset=x")).await;
    assert_eq!(status, 400);
    assert_eq!(
        body,
        json!({"code": 7, "name": "invalid offset", "message": "'x' is not a valid offset: bad base64 encoding"})
    );
}

#[tokio::test]
async fn tags_filter_with_and_or() {
    let s = start(TestNode::loaded(&sample(6))).await;
    let names = |q: &str| {
        let url = s.admin_url(&format!("/services?tags={q}"));
        async move { strs(&get(&url).await.1, "name") }
    };
    assert_eq!(names("even").await, vec!["s0", "s2", "s4"]);
    assert_eq!(names("even,all").await, vec!["s0", "s2", "s4"]);
    assert_eq!(names("even,odd").await, Vec::<String>::new());
    assert_eq!(names("even/odd").await.len(), 6);
    assert_eq!(names("people").await, Vec::<String>::new());
    let (_, paged) = get(&s.admin_url("/services?tags=odd&size=2")).await;
    assert_eq!(strs(&paged, "name"), vec!["s1", "s3"]);
    let next = paged["next"].as_str().unwrap_or_default().to_string();
    assert_eq!(strs(&get(&s.admin_url(&next)).await.1, "name"), vec!["s5"]);
    let (status, body) = get(&s.admin_url("/services?tags=a,b/c")).await;
    assert_eq!((status, &body["code"]), (400, &json!(11)));
    assert_eq!(
        body["message"],
        "invalid option (tags: invalid filter syntax)"
    );
}

#[tokio::test]
async fn consumers_by_custom_id_and_tags_endpoint() {
    let s = start(TestNode::loaded(&sample(2))).await;
    let (_, found) = get(&s.admin_url("/consumers?custom_id=a-1")).await;
    assert_eq!(strs(&found, "username"), vec!["alice"]);
    assert_eq!(found["next"], Value::Null);
    assert_eq!(
        get(&s.admin_url("/consumers?custom_id=zz")).await.1["data"],
        json!([])
    );
    assert_eq!(get(&s.admin_url("/consumers?custom_id=")).await.0, 400);
    let (_, tags) = get(&s.admin_url("/tags/people")).await;
    assert_eq!(tags["data"].as_array().map(Vec::len), Some(1));
    assert_eq!(tags["data"][0]["entity_name"], "consumers");
    let (_, all) = get(&s.admin_url("/tags")).await;
    assert_eq!(
        all["data"].as_array().map(Vec::len),
        Some(5),
        "2 services × 2 tags + alice"
    );
}
