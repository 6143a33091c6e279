//! A 429 of rate-limiting with `policy: redis`, through the real binary and the real Redis on
//! 127.0.0.1:6379 (database 11, keys under the test's own route id, deleted afterwards): Kong's headers
//! (`X-RateLimit-*` per period, `RateLimit-*` of the tightest, `Retry-After`) and body, the same as the
//! local policy's 429 for the same counts, and nothing counted for the refused request.

use redis::AsyncCommands;
use sluice_testkit::{client, EchoUpstream, Gateway};

const BIN: &str = env!("CARGO_BIN_EXE_sluice");
const DB: i64 = 11;

/// Two routes with the same limits (3 a minute, 100 an hour, by `x-tenant`): `/redis` counts on Redis,
/// `/local` on the node.
fn config(upstream: u16, route_id: uuid::Uuid) -> String {
    let route = |name: &str, id: String, policy: &str| {
        format!(
            r#"  - name: {name}
    {id}paths: [/{name}]
    plugins:
    - name: rate-limiting
      config:
        minute: 3
        hour: 100
        limit_by: header
        header_name: x-tenant
        fault_tolerant: false
        policy: {policy}
        redis: {{host: 127.0.0.1, port: 6379, database: {DB}, timeout: 2000}}
"#
        )
    };
    format!(
        "_format_version: \"3.0\"\nservices:\n- name: s\n  url: http://127.0.0.1:{upstream}\n  routes:\n{}{}",
        route("redis", format!("id: {route_id}\n    "), "redis"),
        route("local", String::new(), "local"),
    )
}

/// A response's status, headers and body.
struct Answer {
    status: u16,
    headers: reqwest::header::HeaderMap,
    body: String,
}

async fn get(gw: &Gateway, path: &str, tenant: &str) -> Answer {
    let resp = client()
        .get(gw.proxy_url(path))
        .header("x-tenant", tenant)
        .send()
        .await
        .unwrap();
    let (status, headers) = (resp.status().as_u16(), resp.headers().clone());
    let body = resp.text().await.unwrap();
    Answer {
        status,
        headers,
        body,
    }
}

/// The minute of the Unix clock.
fn minute() -> u64 {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    now.unwrap().as_secs() / 60
}

/// Three requests pass on `path`, the fourth is refused: the refusal and its minute, or None when the
/// minute turned meanwhile (the counts started over).
async fn refusal(gw: &Gateway, path: &str, tenant: &str) -> Option<(Answer, u64)> {
    let started = minute();
    for remaining in ["2", "1", "0"] {
        let passed = get(gw, path, tenant).await;
        assert_eq!(passed.status, 200, "{path}: {}", passed.body);
        assert_eq!(passed.headers["x-ratelimit-remaining-minute"], remaining);
    }
    let refused = get(gw, path, tenant).await;
    (minute() == started).then_some((refused, started))
}

/// The headers that differ from one response to the next whatever the policy.
fn steady(headers: &reqwest::header::HeaderMap) -> Vec<(String, String)> {
    let mut steady: Vec<(String, String)> = (headers.iter())
        .filter(|(name, _)| {
            !["date", "x-kong-response-latency", "x-kong-request-id"].contains(&name.as_str())
        })
        .map(|(name, value)| (name.to_string(), value.to_str().unwrap().to_string()))
        .collect();
    steady.sort();
    steady
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redis_refusal_has_kongs_headers_and_body() {
    let up = EchoUpstream::start();
    let route = uuid::Uuid::new_v4();
    let gw = Gateway::builder(BIN)
        .config_yaml(&config(up.port(), route))
        .start();
    // A tenant of its own per try: a try that straddled a minute's end is made again.
    let ((redis, at), (local, _), tenant) = loop {
        let tenant = uuid::Uuid::new_v4().to_string();
        let Some(redis) = refusal(&gw, "/redis", &tenant).await else {
            continue;
        };
        if let Some(local) = refusal(&gw, "/local", &tenant).await {
            break (redis, local, tenant);
        }
    };
    // The keys are read, then deleted before any check can fail.
    let mut con = redis::Client::open(format!("redis://127.0.0.1:6379/{DB}"))
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .expect("redis on 127.0.0.1:6379");
    let key = format!("ratelimit:{route}:*:{tenant}:{}:minute", at * 60_000);
    let keys: Vec<String> = con.keys(&key).await.unwrap();
    let counted: Option<u64> = match keys.as_slice() {
        [minute_key] => con.get(minute_key).await.unwrap(),
        _ => None,
    };
    let all: Vec<String> = con.keys(format!("ratelimit:{route}:*")).await.unwrap();
    let _: () = con.del(&all).await.unwrap();
    assert_eq!(redis.status, 429);
    let h = &redis.headers;
    assert_eq!(h["x-ratelimit-limit-minute"], "3");
    assert_eq!(h["x-ratelimit-remaining-minute"], "0");
    assert_eq!(h["x-ratelimit-limit-hour"], "100");
    assert!(h.contains_key("x-ratelimit-remaining-hour"));
    assert_eq!(h["ratelimit-limit"], "3");
    assert_eq!(h["ratelimit-remaining"], "0");
    let reset: u64 = h["ratelimit-reset"].to_str().unwrap().parse().unwrap();
    assert!(
        (1..=60).contains(&reset),
        "seconds left in the minute: {reset}"
    );
    assert_eq!(h["retry-after"], h["ratelimit-reset"]);
    assert_eq!(h["content-type"], "application/json; charset=utf-8");
    let body: serde_json::Value = serde_json::from_str(&redis.body).unwrap();
    assert_eq!(
        body,
        serde_json::json!({"message": "API rate limit exceeded"})
    );
    // The same answer as the local policy's (a reset a second apart at most: two requests later).
    assert_eq!(redis.body, local.body);
    let (mut redis_h, mut local_h) = (steady(&redis.headers), steady(&local.headers));
    for h in [&mut redis_h, &mut local_h] {
        h.retain(|(name, _)| name != "ratelimit-reset" && name != "retry-after");
    }
    assert_eq!(redis_h, local_h);
    // Refused, so not counted: the minute's key holds the three that passed.
    assert_eq!(counted, Some(3), "{key}: {keys:?}");
}
