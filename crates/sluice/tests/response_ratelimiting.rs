//! response-ratelimiting through the real binary: the upstream (the testkit echo server, told to answer
//! with `X-Kong-Limit`) spends named limits; the gateway counts them, tells the upstream and the client what
//! remains, refuses with 429 once a limit is spent, and hides the usage header.

use sluice_testkit::{client, EchoUpstream, Gateway};

const BIN: &str = env!("CARGO_BIN_EXE_sluice");

fn config(upstream: u16) -> String {
    format!(
        r#"_format_version: "3.0"
services:
- name: s
  url: http://127.0.0.1:{upstream}
  routes:
  - name: media
    paths: [/media]
    plugins:
    - name: response-ratelimiting
      config: {{limit_by: ip, limits: {{videos: {{minute: 3, hour: 100}}, images: {{minute: 50}}}}}}
  - name: strict
    paths: [/strict]
    plugins:
    - name: response-ratelimiting
      config: {{limit_by: ip, block_on_first_violation: true, hide_client_headers: true, limits: {{videos: {{minute: 1}}}}}}
"#
    )
}

/// One request whose response spends `spend` (the echo server sets `X-Kong-Limit` to it): the status, the
/// response headers, the request headers the upstream saw, and the body's length.
async fn call(
    gw: &Gateway,
    path: &str,
    spend: &str,
) -> (u16, reqwest::header::HeaderMap, serde_json::Value, usize) {
    let resp = client()
        .get(gw.proxy_url(path))
        .header("x-echo-set-header", format!("x-kong-limit: {spend}"))
        .send()
        .await
        .unwrap();
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let body = resp.bytes().await.unwrap();
    let echoed = serde_json::from_slice(&body).unwrap_or_default();
    (status, headers, echoed, body.len())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_upstream_spends_named_limits_and_the_gateway_refuses_when_spent() {
    let up = EchoUpstream::start();
    let gw = Gateway::builder(BIN)
        .config_yaml(&config(up.port()))
        .start();

    let (status, headers, echoed, _) = call(&gw, "/media", "videos=2, images=1").await;
    assert_eq!(status, 200);
    // The upstream was told what remained before this request, the smallest over the name's periods.
    assert_eq!(echoed["headers"]["x-ratelimit-remaining-videos"], "3");
    assert_eq!(echoed["headers"]["x-ratelimit-remaining-images"], "50");
    // The client sees each window after this response's spending; the usage header is gone.
    assert_eq!(headers["x-ratelimit-limit-videos-minute"], "3");
    assert_eq!(headers["x-ratelimit-remaining-videos-minute"], "1");
    assert_eq!(headers["x-ratelimit-remaining-videos-hour"], "98");
    assert_eq!(headers["x-ratelimit-remaining-images-minute"], "49");
    assert!(!headers.contains_key("x-kong-limit"));

    // The log phase counts after the response; wait for it to land.
    let mut seen = String::new();
    for _ in 0..50 {
        let (_, _, echoed, _) = call(&gw, "/media", "images=0").await;
        seen = echoed["headers"]["x-ratelimit-remaining-videos"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        if seen == "1" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(seen, "1");
    // Spending the last video is allowed (remaining was 1), then the limit is spent.
    let (status, headers, _, _) = call(&gw, "/media", "videos=1").await;
    assert_eq!(
        (status, &headers["x-ratelimit-remaining-videos-minute"]),
        (200, &"0".parse().unwrap())
    );
    let mut refused = None;
    for _ in 0..50 {
        let (status, headers, _, len) = call(&gw, "/media", "videos=1").await;
        if status == 429 {
            refused = Some((headers, len));
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let (headers, len) = refused.expect("a response spending a spent limit is refused");
    assert_eq!(len, 0, "Kong refuses with no body");
    assert!(!headers.contains_key("x-kong-limit"));
    // A response that spends nothing of the spent limit still passes.
    let (status, _, _, _) = call(&gw, "/media", "images=1").await;
    assert_eq!(status, 200);

    // block_on_first_violation: refused in access, before the upstream, with Kong's message.
    let (status, headers, _, _) = call(&gw, "/strict", "videos=1").await;
    assert_eq!(status, 200);
    assert!(
        !headers.contains_key("x-ratelimit-limit-videos-minute"),
        "hidden"
    );
    let mut body = String::new();
    for _ in 0..50 {
        let resp = client().get(gw.proxy_url("/strict")).send().await.unwrap();
        if resp.status() == 429 {
            body = resp.text().await.unwrap();
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(
        body,
        r#"{"message":"API rate limit exceeded for 'videos'"}"#
    );
    let before = up.requests();
    let resp = client().get(gw.proxy_url("/strict")).send().await.unwrap();
    assert_eq!(resp.status(), 429);
    assert_eq!(
        up.requests(),
        before,
        "refused before the upstream was asked"
    );
}

/// `policy: redis` on the real Redis (database 5, keys of this test's own route id, deleted afterwards):
/// two nodes spend one limit together, in Kong's key layout; a dead Redis follows `fault_tolerant`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_nodes_spend_one_limit_on_redis() {
    use redis::AsyncCommands;
    let up = EchoUpstream::start();
    let route = uuid::Uuid::new_v4();
    let dead = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let yaml = format!(
        r#"_format_version: "3.0"
services:
- name: s
  url: http://127.0.0.1:{}
  routes:
  - name: media
    id: {route}
    paths: [/media]
    plugins:
    - name: response-ratelimiting
      config: {{limit_by: ip, policy: redis, redis: {{host: 127.0.0.1, port: 6379, database: 5}}, limits: {{videos: {{minute: 3}}}}}}
  - name: tolerant
    paths: [/tolerant]
    plugins:
    - name: response-ratelimiting
      config: {{policy: redis, redis_host: 127.0.0.1, redis_port: {dead}, redis_timeout: 200, limits: {{videos: {{minute: 3}}}}}}
  - name: strict
    paths: [/strict]
    plugins:
    - name: response-ratelimiting
      config: {{policy: redis, fault_tolerant: false, redis: {{host: 127.0.0.1, port: {dead}, timeout: 200}}, limits: {{videos: {{minute: 3}}}}}}
"#,
        up.port()
    );
    let a = Gateway::builder(BIN).config_yaml(&yaml).start();
    let b = Gateway::builder(BIN).config_yaml(&yaml).start();
    let (status, headers, _, _) = call(&a, "/media", "videos=2").await;
    assert_eq!(
        (status, &headers["x-ratelimit-remaining-videos-minute"]),
        (200, &"1".parse().unwrap())
    );
    // The other node sees what the first one spent (the log phase adds it after the response).
    let mut seen = serde_json::Value::Null;
    for _ in 0..50 {
        let (_, _, echoed, _) = call(&b, "/media", "videos=0").await;
        seen = echoed["headers"]["x-ratelimit-remaining-videos"].clone();
        if seen == "1" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(seen, "1");
    let mut con = redis::Client::open("redis://127.0.0.1:6379/5")
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .expect("redis on 127.0.0.1:6379");
    let keys: Vec<String> = con
        .keys(format!("response-ratelimit:{route}:*"))
        .await
        .unwrap();
    assert_eq!(keys.len(), 1, "{keys:?}");
    assert!(keys[0].ends_with(":videos:minute"), "{keys:?}");
    let ttl: i64 = con.ttl(&keys[0]).await.unwrap();
    assert!((60..=120).contains(&ttl), "{ttl}");
    let _: () = con.del(&keys).await.unwrap();

    // Redis unreachable: fault_tolerant lets the request through uncounted, false answers 500.
    let (status, headers, _, _) = call(&a, "/tolerant", "videos=1").await;
    assert_eq!(status, 200);
    assert!(!headers.contains_key("x-ratelimit-remaining-videos-minute"));
    let (status, _, _, _) = call(&a, "/strict", "videos=1").await;
    assert_eq!(status, 500);
}

/// Waits until `gw` tells the upstream `want` remains of videos (the plugin reaching the node, a spending
/// landing after its response).
async fn until(gw: &Gateway, want: &str) {
    let mut seen = serde_json::Value::Null;
    for _ in 0..100 {
        let (_, _, echoed, _) = call(gw, "/media", "videos=0").await;
        seen = echoed["headers"]["x-ratelimit-remaining-videos"].clone();
        if seen == want {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("the upstream was told {seen}, not {want}");
}

/// `policy: cluster`: two DB-mode nodes on one real PostgreSQL database (made and dropped by the test) spend
/// one limit together in Kong's `response_ratelimiting_metrics` table.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_nodes_spend_one_limit_in_the_database() {
    use sluice_testkit::{send_json, TestDb};
    if sluice_testkit::seconds_left_in_hour() < 20 {
        let left = sluice_testkit::seconds_left_in_hour();
        tokio::time::sleep(std::time::Duration::from_secs(left + 1)).await;
    }
    let db = TestDb::bootstrapped(BIN, "rrlcluster");
    let a = db.gateway(BIN, None).start();
    let b = db.gateway(BIN, None).start();
    let up = EchoUpstream::start();
    let admin = |path: &str| a.admin_url(path);
    let svc = serde_json::json!({"name": "s", "url": up.url()});
    assert_eq!(
        send_json("POST", &admin("/services"), Some(svc)).await.0,
        201
    );
    let route = serde_json::json!({"name": "media", "paths": ["/media"]});
    let (s, e) = send_json("POST", &admin("/services/s/routes"), Some(route)).await;
    assert_eq!(s, 201, "{e}");
    let plugin = serde_json::json!({"name": "response-ratelimiting", "config": {"policy": "cluster",
        "limit_by": "ip", "fault_tolerant": false, "limits": {"videos": {"hour": 5}}}});
    let (s, e) = send_json("POST", &admin("/routes/media/plugins"), Some(plugin)).await;
    assert_eq!(s, 201, "{e}");
    until(&a, "5").await;
    let (status, headers, _, _) = call(&a, "/media", "videos=3").await;
    assert_eq!(status, 200);
    assert_eq!(headers["x-ratelimit-remaining-videos-hour"], "2");
    // The other node reads what the first one spent (added after the response).
    until(&b, "2").await;
    let (status, _, _, _) = call(&b, "/media", "videos=2").await;
    assert_eq!(status, 200);
    until(&a, "0").await;
    let (status, _, _, body) = call(&a, "/media", "videos=1").await;
    assert_eq!((status, body), (429, 0), "spent: refused with no body");
    // Kong's table: the period column is `<name>_<period>`.
    let row = db.sql("SELECT period || '=' || value FROM response_ratelimiting_metrics");
    assert_eq!(row, "videos_hour=5");
}
