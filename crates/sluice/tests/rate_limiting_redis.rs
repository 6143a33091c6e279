//! rate-limiting with `policy: redis` through real gateway nodes and the real Redis on 127.0.0.1:6379
//! (database 3, keys of each test's own route id, deleted afterwards), and a private `redis-server` that a
//! test kills and starts again (issue 20); `sync_rate > 0` in [`sync`].

use private_redis::PrivateRedis;
use redis::AsyncCommands;
use sluice_testkit::{client, EchoUpstream, Gateway};
use std::time::Duration;

#[path = "rl_support/private_redis.rs"]
mod private_redis;
#[path = "rl_support/rounds.rs"]
mod rounds;
#[path = "rate_limiting_redis/sync.rs"]
mod sync;

const BIN: &str = env!("CARGO_BIN_EXE_sluice");
const DB: i64 = 3;

fn config(upstream: u16, route_id: uuid::Uuid, redis_port: u16, extra: &str) -> String {
    format!(
        r#"_format_version: "3.0"
services:
- name: s
  url: http://127.0.0.1:{upstream}
  routes:
  - name: limited
    id: {route_id}
    paths: [/limited]
    plugins:
    - name: rate-limiting
      config:
        hour: 100
        limit_by: header
        header_name: x-tenant
        policy: redis
        redis: {{host: 127.0.0.1, port: {redis_port}, database: {DB}, timeout: 300}}
{extra}"#
    )
}

async fn redis_on(port: u16) -> redis::aio::MultiplexedConnection {
    redis::Client::open(format!("redis://127.0.0.1:{port}/{DB}"))
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .expect("redis on 127.0.0.1")
}

/// Deletes every key of `route_id`.
async fn clean(port: u16, route_id: uuid::Uuid) {
    let mut con = redis_on(port).await;
    let keys: Vec<String> = con.keys(format!("ratelimit:{route_id}:*")).await.unwrap();
    if !keys.is_empty() {
        let _: () = con.del(keys).await.unwrap();
    }
}

/// Issue 20's check ([`rounds`]): three nodes, 300 concurrent requests, exactly 100 per second pass, 20
/// times, with the window boundary outside and inside the run.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_nodes_let_exactly_the_limit_through() {
    let up = EchoUpstream::start();
    let route = uuid::Uuid::new_v4();
    // Strict, with time to answer: a Redis that is slow under the load must fail the test (500), not let
    // requests through uncounted.
    let yaml = config(up.port(), route, 6379, "")
        .replace(
            "hour: 100",
            "second: 100\n        minute: 1000000000\n        fault_tolerant: false",
        )
        .replace("timeout: 300", "timeout: 5000");
    let nodes: Vec<Gateway> = (0..3)
        .map(|_| Gateway::builder(BIN).config_yaml(&yaml).workers(2).start())
        .collect();
    let urls: Vec<String> = nodes.iter().map(|n| n.proxy_url("/limited")).collect();
    let con = redis_on(6379).await;
    rounds::exact_rounds(&urls, "x-tenant", |tenant| {
        let mut con = con.clone();
        async move {
            // Kong's key layout: ratelimit:<route>:<service>:<identifier>:<window start ms>:<period>.
            let keys: Vec<String> = con
                .keys(format!("ratelimit:{route}:*:{tenant}:*:minute"))
                .await
                .unwrap();
            let mut counted = 0;
            for key in keys {
                counted += con.get::<_, u64>(key).await.unwrap();
            }
            counted
        }
    })
    .await;
    clean(6379, route).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn headers_as_kong_sends_them() {
    let up = EchoUpstream::start();
    let route = uuid::Uuid::new_v4();
    let gw = Gateway::builder(BIN)
        .config_yaml(&config(up.port(), route, 6379, ""))
        .start();
    let resp = client()
        .get(gw.proxy_url("/limited"))
        .header("x-tenant", "h")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let h = resp.headers();
    assert_eq!(h["x-ratelimit-limit-hour"], "100");
    assert_eq!(h["x-ratelimit-remaining-hour"], "99");
    assert_eq!(h["ratelimit-limit"], "100");
    assert_eq!(h["ratelimit-remaining"], "99");
    assert!(h.contains_key("ratelimit-reset"));
    // Kong's key, expiring with its window (plus a grace).
    let mut con = redis_on(6379).await;
    let keys: Vec<String> = con
        .keys(format!("ratelimit:{route}:*:h:*:hour"))
        .await
        .unwrap();
    assert_eq!(keys.len(), 1, "{keys:?}");
    let ttl: i64 = con.ttl(&keys[0]).await.unwrap();
    assert!((3600..=3660).contains(&ttl), "{ttl}");
    clean(6379, route).await;
}

/// A chunked body with `x-tenant: b` through the gateway (`Connection: close`); the response's text.
fn post_chunked(port: u16, len: usize) -> String {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let head = "POST /limited HTTP/1.1\r\nHost: x\r\nx-tenant: b\r\nConnection: close\r\n\
                Transfer-Encoding: chunked\r\n\r\n";
    let body = format!("{len:x}\r\n{}\r\n0\r\n\r\n", "a".repeat(len));
    s.write_all(format!("{head}{body}").as_bytes()).unwrap();
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out
}

/// A body limit set by a plugin before the Redis count waits (request-size-limiting on a chunked body,
/// counted while it streams) still caps the body after the wait: 413 past it, the upstream's answer with
/// the limit's headers within it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_limit_holds_after_the_redis_count() {
    let up = EchoUpstream::start();
    let route = uuid::Uuid::new_v4();
    let size = "    - {name: request-size-limiting, config: {allowed_payload_size: 100, size_unit: bytes}}\n";
    let gw = Gateway::builder(BIN)
        .config_yaml(&config(up.port(), route, 6379, size))
        .start();
    let port = gw.proxy_port();
    let over = tokio::task::spawn_blocking(move || post_chunked(port, 200))
        .await
        .unwrap();
    assert!(over.starts_with("HTTP/1.1 413"), "{over}");
    assert!(over.contains("Request size limit exceeded"), "{over}");
    let within = tokio::task::spawn_blocking(move || post_chunked(port, 50))
        .await
        .unwrap();
    assert!(within.starts_with("HTTP/1.1 200"), "{within}");
    assert!(
        within
            .to_ascii_lowercase()
            .contains("x-ratelimit-remaining-hour: 98"),
        "{within}"
    );
    clean(6379, route).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_outage_follows_fault_tolerant_and_the_node_reconnects() {
    let port = private_redis::free_port();
    let redis = PrivateRedis::start(port);
    let up = EchoUpstream::start();
    let route = uuid::Uuid::new_v4();
    let strict = format!(
        r#"  - name: strict
    paths: [/strict]
    plugins:
    - name: rate-limiting
      config:
        hour: 100
        policy: redis
        fault_tolerant: false
        redis_host: 127.0.0.1
        redis_port: {port}
        redis_timeout: 300
"#
    );
    let gw = Gateway::builder(BIN)
        .config_yaml(&config(up.port(), route, port, &strict))
        .start();
    let get = |path: &str| sluice_testkit::status_with(gw.proxy_url(path), "x-tenant", "x".into());
    assert_eq!(get("/limited").await, 200);
    assert_eq!(get("/strict").await, 200, "the flat redis_* fields work");
    drop(redis);
    // fault_tolerant (the default) lets requests through; fault_tolerant: false answers Kong's 500.
    assert_eq!(get("/limited").await, 200);
    assert_eq!(get("/strict").await, 500);
    // Redis comes back on the same port: counting resumes without a restart.
    let _redis = PrivateRedis::start(port);
    let mut counted = false;
    for _ in 0..20 {
        let resp = client()
            .get(gw.proxy_url("/limited"))
            .header("x-tenant", "x")
            .send()
            .await
            .unwrap();
        if resp.headers().contains_key("x-ratelimit-remaining-hour") {
            counted = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        counted,
        "the node did not count on redis again after it came back"
    );
    // Every worker recovers on its first request: a broken cached connection is replaced, not failed on.
    for _ in 0..10 {
        assert_eq!(get("/strict").await, 200);
    }
}
