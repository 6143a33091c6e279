//! decK's flow replayed against a DB-mode node (decK itself cannot be installed here; the requests and
//! bodies follow Kong/deck and Kong/go-database-reconciler): `GET /`, the schemas, paged dumps with
//! `size=1000` and tags, `PUT /{entity}/{id}` with client-made ids and full bodies, credentials under their
//! consumer, `DELETE` by id. Then a round trip: one database dumped through the Admin API and loaded into an
//! empty one with PUTs gives identical dumps.

use serde_json::{json, Value};
use sluice_testkit::{send_json, Gateway, TestDb};

const BIN: &str = env!("CARGO_BIN_EXE_sluice");
const TAG: &str = "deck-managed";

/// Every entity of `path` (a collection path), following `next` as decK does.
async fn dump(gw: &Gateway, path: &str, size: usize, tags: Option<&str>) -> Vec<Value> {
    let mut url = format!("{path}?size={size}");
    if let Some(t) = tags {
        url.push_str(&format!("&tags={t}"));
    }
    let mut out = Vec::new();
    for _ in 0..100 {
        let (s, page) = send_json("GET", &gw.admin_url(&url), None).await;
        assert_eq!(s, 200, "{url}: {page}");
        out.extend(page["data"].as_array().unwrap().iter().cloned());
        match page["next"].as_str() {
            Some(next) => url = next.to_string(),
            None => return out,
        }
    }
    panic!("paging never ended at {path}");
}

fn id(n: u128) -> String {
    uuid::Uuid::from_u128(0x5100_0000_0000_4000_8000_0000_0000_0000 | n).to_string()
}

/// The desired state decK would PUT: (path, body) in dependency order.
fn desired(routes: usize) -> Vec<(String, Value)> {
    let mut puts = vec![(
        format!("/services/{}", id(1)),
        json!({"id": id(1), "name": "svc", "host": "example.internal", "port": 80, "protocol": "http",
               "path": "/", "retries": 5, "connect_timeout": 60000, "read_timeout": 60000,
               "write_timeout": 60000, "enabled": true, "tags": [TAG]}),
    )];
    for i in 0..routes {
        puts.push((
            format!("/routes/{}", id(1000 + i as u128)),
            json!({"id": id(1000 + i as u128), "name": format!("r{i}"), "paths": [format!("/r{i}")],
                   "protocols": ["http", "https"], "strip_path": true, "preserve_host": false,
                   "service": {"id": id(1)}, "tags": [TAG]}),
        ));
    }
    puts.push((
        format!("/consumers/{}", id(2)),
        json!({"id": id(2), "username": "ann", "custom_id": "c-ann", "tags": [TAG]}),
    ));
    puts.push((
        format!("/consumers/{}/key-auth/{}", id(2), id(3)),
        json!({"id": id(3), "key": "ann-key", "tags": [TAG]}),
    ));
    puts.push((
        format!("/plugins/{}", id(4)),
        json!({"id": id(4), "name": "rate-limiting", "service": {"id": id(1)}, "enabled": true,
               "protocols": ["grpc", "grpcs", "http", "https"],
               "config": {"minute": 10, "policy": "local", "limit_by": "consumer"}, "tags": [TAG]}),
    ));
    puts.push((
        format!("/upstreams/{}", id(5)),
        json!({"id": id(5), "name": "up", "algorithm": "round-robin", "slots": 10000, "tags": [TAG]}),
    ));
    puts.push((
        format!("/upstreams/{}/targets/{}", id(5), id(6)),
        json!({"id": id(6), "target": "10.0.0.1:80", "weight": 100, "tags": [TAG]}),
    ));
    puts
}

/// A dump without what changes on every write (`updated_at`), by kind, as decK compares them.
async fn state(gw: &Gateway) -> Vec<(String, Vec<Value>)> {
    let mut out = Vec::new();
    for path in [
        "/services",
        "/routes",
        "/consumers",
        "/key-auths",
        "/plugins",
        "/upstreams",
    ] {
        let mut items = dump(gw, path, 1000, None).await;
        for item in &mut items {
            item.as_object_mut().unwrap().remove("updated_at");
        }
        out.push((path.to_string(), items));
    }
    let mut targets = dump(gw, &format!("/upstreams/{}/targets", id(5)), 1000, None).await;
    for t in &mut targets {
        t.as_object_mut().unwrap().remove("updated_at");
    }
    out.push(("targets".into(), targets));
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deck_sync_dump_and_round_trip() {
    let db = TestDb::bootstrapped(BIN, "deck");
    let gw = db.gateway(BIN, None).start();

    // What decK reads first.
    let (s, root) = send_json("GET", &gw.admin_url("/"), None).await;
    assert_eq!(s, 200);
    let version = root["version"].as_str().unwrap();
    assert!(
        version.starts_with("3.") && version.split('.').count() == 3,
        "{version}"
    );
    assert_eq!(root["configuration"]["database"], "postgres");
    for path in [
        "/schemas/services",
        "/schemas/routes",
        "/schemas/consumers",
        "/schemas/upstreams",
        "/schemas/targets",
        "/schemas/keyauth_credentials",
        "/schemas/plugins/rate-limiting",
    ] {
        assert_eq!(
            send_json("GET", &gw.admin_url(path), None).await.0,
            200,
            "{path}"
        );
    }
    assert!(dump(&gw, "/services", 1000, Some(TAG)).await.is_empty());

    // Sync: every entity PUT by its client-made id, with full bodies.
    let puts = desired(120);
    for (path, body) in &puts {
        let (s, e) = send_json("PUT", &gw.admin_url(path), Some(body.clone())).await;
        assert_eq!(s, 200, "PUT {path}: {e}");
        assert_eq!(e["id"], body["id"]);
    }
    let routes = dump(&gw, "/routes", 1000, Some(TAG)).await;
    assert_eq!(routes.len(), 120);
    assert_eq!(
        dump(&gw, "/routes", 50, Some(TAG)).await,
        routes,
        "paging with smaller pages"
    );
    assert_eq!(
        dump(&gw, "/routes", 1000, Some("other-tag")).await,
        Vec::<Value>::new()
    );
    let before = state(&gw).await;

    // A second sync with nothing changed changes nothing; a removed route is deleted by id.
    for (path, body) in &puts {
        assert_eq!(
            send_json("PUT", &gw.admin_url(path), Some(body.clone()))
                .await
                .0,
            200
        );
    }
    assert_eq!(state(&gw).await, before);
    let (s, _) = send_json(
        "DELETE",
        &gw.admin_url(&format!("/routes/{}", id(1000))),
        None,
    )
    .await;
    assert_eq!(s, 204);
    assert_eq!(dump(&gw, "/routes", 1000, Some(TAG)).await.len(), 119);
    let before = state(&gw).await;

    // Round trip: dump this database and load it into an empty one with PUTs: identical dumps.
    let other_db = TestDb::bootstrapped(BIN, "deck2");
    let other = other_db.gateway(BIN, None).start();
    for (path, items) in &before {
        for item in items {
            let id = item["id"].as_str().unwrap();
            let target = match path.as_str() {
                "/key-auths" => format!(
                    "/consumers/{}/key-auth/{id}",
                    item["consumer"]["id"].as_str().unwrap()
                ),
                "targets" => format!(
                    "/upstreams/{}/targets/{id}",
                    item["upstream"]["id"].as_str().unwrap()
                ),
                p => format!("{p}/{id}"),
            };
            let (s, e) = send_json("PUT", &other.admin_url(&target), Some(item.clone())).await;
            assert_eq!(s, 200, "PUT {target}: {e}");
        }
    }
    assert_eq!(state(&other).await, before);
}
