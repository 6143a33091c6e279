//! proxy-cache through the real binary, in front of the echo upstream (whose counter shows what reached
//! it): Miss then Hit, the key Kong computes, vary headers and query arguments, Bypass for what is not
//! cacheable, TTLs, `Cache-Control` with `cache_control: true`, the store's bound (`mem_cache_size`), a
//! reload keeping the cache, and the Admin API's lookup and purges.

use reqwest::header::HeaderMap;
use sluice_testkit::{client, EchoUpstream, Gateway};
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_sluice");
const ROUTE: &str = "5d9c1f1e-0000-4000-8000-00000000000a";
const PLUGIN: &str = "5d9c1f1e-0000-4000-8000-0000000000ff";

/// One route per plugin config: `(path, config)`; the first route has the ids above.
fn config(port: u16, routes: &[(&str, &str)]) -> String {
    let mut yaml = format!(
        "_format_version: \"3.0\"\nservices:\n- name: s\n  url: http://127.0.0.1:{port}\n  routes:\n"
    );
    for (i, (path, conf)) in routes.iter().enumerate() {
        let ids = match i {
            0 => format!("    id: {ROUTE}\n"),
            _ => String::new(),
        };
        let plugin_id = match i {
            0 => format!("      id: {PLUGIN}\n"),
            _ => String::new(),
        };
        yaml.push_str(&format!(
            "  - paths: [{path}]\n{ids}    plugins:\n    - name: proxy-cache\n{plugin_id}      config: {conf}\n"
        ));
    }
    yaml
}

struct Reply {
    status: u16,
    headers: HeaderMap,
    body: Vec<u8>,
}

impl Reply {
    fn cache(&self) -> &str {
        self.header("x-cache-status")
    }
    fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .map_or("", |v| v.to_str().unwrap_or(""))
    }
}

async fn send(gw: &Gateway, method: &str, path: &str, headers: &[(&str, &str)]) -> Reply {
    let mut req = client().request(method.parse().unwrap(), gw.proxy_url(path));
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let resp = req.send().await.unwrap_or_else(|e| panic!("{path}: {e}"));
    let (status, headers) = (resp.status().as_u16(), resp.headers().clone());
    let body = resp.bytes().await.unwrap().to_vec();
    Reply {
        status,
        headers,
        body,
    }
}

async fn get(gw: &Gateway, path: &str, headers: &[(&str, &str)]) -> Reply {
    send(gw, "GET", path, headers).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hits_are_served_without_the_upstream_and_vary_as_configured() {
    let up = EchoUpstream::start();
    let routes = [
        ("/c", "{strategy: memory}"),
        ("/vq", "{strategy: memory, vary_query_params: [x]}"),
        ("/vh", "{strategy: memory, vary_headers: [X-Tenant]}"),
        (
            "/quiet",
            "{strategy: memory, response_headers: {age: false, X-Cache-Status: false, X-Cache-Key: false}}",
        ),
        ("/text", "{strategy: memory, content_type: [text/plain]}"),
    ];
    let gw = Gateway::builder(BIN)
        .config_yaml(&config(up.port(), &routes))
        .start();

    let miss = get(&gw, "/c/a", &[]).await;
    assert_eq!((miss.status, miss.cache()), (200, "Miss"));
    // sha256("<route id>|GET|GET /c/a HTTP/1.1||"), computed with Python's hashlib.
    let key = "aa1044d5339dcaebef4f762f1f20c63d063e04954c16eaa28abf6ceb4553887f";
    assert_eq!(miss.header("x-cache-key"), key);
    assert_eq!(miss.header("age"), "");
    let hit = get(&gw, "/c/a", &[]).await;
    assert_eq!((hit.status, hit.cache()), (200, "Hit"));
    assert_eq!(hit.header("x-cache-key"), key);
    // Whole seconds since it was stored (1 when a second boundary passed in between).
    assert!(
        ["0", "1"].contains(&hit.header("age")),
        "{}",
        hit.header("age")
    );
    assert_eq!(hit.header("content-type"), "application/json");
    assert_eq!(hit.body, miss.body, "the stored body, byte for byte");
    assert_eq!(up.requests(), 1, "the hit never reached the upstream");

    // Every query argument varies the key by default; only `x` on /vq.
    assert_eq!(get(&gw, "/c/a?q=1", &[]).await.cache(), "Miss");
    assert_eq!(get(&gw, "/c/a?q=1", &[]).await.cache(), "Hit");
    assert_eq!(get(&gw, "/c/a?q=2", &[]).await.cache(), "Miss");
    assert_eq!(get(&gw, "/vq?x=1&y=1", &[]).await.cache(), "Miss");
    assert_eq!(get(&gw, "/vq?y=2&x=1", &[]).await.cache(), "Hit");
    assert_eq!(get(&gw, "/vq?x=2&y=1", &[]).await.cache(), "Miss");
    // Headers vary the key only when named.
    let tenant = |t| [("x-tenant", t)];
    assert_eq!(get(&gw, "/vh", &tenant("a")).await.cache(), "Miss");
    assert_eq!(get(&gw, "/vh", &tenant("a")).await.cache(), "Hit");
    assert_eq!(get(&gw, "/vh", &tenant("b")).await.cache(), "Miss");
    assert_eq!(get(&gw, "/c/a", &tenant("b")).await.cache(), "Hit");
    assert_eq!(up.requests(), 7);

    // Not cacheable: the method, the status, the content type.
    let post = send(&gw, "POST", "/c/p", &[]).await;
    assert_eq!((post.cache(), post.header("x-cache-key")), ("Bypass", ""));
    assert_eq!(send(&gw, "POST", "/c/p", &[]).await.cache(), "Bypass");
    for _ in 0..2 {
        let failed = get(&gw, "/c/500", &[("x-echo-status", "500")]).await;
        assert_eq!((failed.status, failed.cache()), (500, "Bypass"));
        assert_eq!(failed.header("x-cache-key").len(), 64);
    }
    let untyped = [("x-echo-body-size", "10")];
    assert_eq!(get(&gw, "/c/raw", &untyped).await.cache(), "Bypass");
    let charset = [
        ("x-echo-body-size", "10"),
        (
            "x-echo-set-header",
            "content-type: application/json; charset=utf-8",
        ),
    ];
    assert_eq!(
        get(&gw, "/c/cs", &charset).await.cache(),
        "Bypass",
        "an exact match only"
    );
    assert_eq!(get(&gw, "/c/cs", &charset).await.cache(), "Bypass");
    assert_eq!(up.requests(), 14);

    // A large body is stored as it streams through, and replayed whole.
    let big = [
        ("x-echo-body-size", "300000"),
        ("x-echo-set-header", "content-type: text/plain"),
    ];
    let first = get(&gw, "/text/big", &big).await;
    assert_eq!((first.cache(), first.body.len()), ("Miss", 300_000));
    let again = get(&gw, "/text/big", &big).await;
    assert_eq!((again.cache(), again.body.len()), ("Hit", 300_000));
    assert_eq!(again.header("content-length"), "300000");
    assert_eq!(get(&gw, "/text/json", &[]).await.cache(), "Bypass");
    assert_eq!(up.requests(), 16);

    // HEAD is cached under its own key.
    assert_eq!(send(&gw, "HEAD", "/c/a", &[]).await.cache(), "Miss");
    let head = send(&gw, "HEAD", "/c/a", &[]).await;
    assert_eq!((head.status, head.cache()), (200, "Hit"));
    assert_eq!(up.requests(), 17);

    // Headers switched off, unless the client sends Kong-Debug.
    let quiet = get(&gw, "/quiet", &[]).await;
    assert_eq!((quiet.cache(), quiet.header("x-cache-key")), ("", ""));
    let quiet = get(&gw, "/quiet", &[]).await;
    assert_eq!((quiet.cache(), quiet.header("age")), ("", ""));
    let debug = get(&gw, "/quiet", &[("kong-debug", "1")]).await;
    assert_eq!(debug.cache(), "Hit");
    assert!(["0", "1"].contains(&debug.header("age")));
    assert_eq!(debug.header("x-cache-key").len(), 64);
    assert_eq!(up.requests(), 18);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ttls_and_cache_control() {
    let up = EchoUpstream::start();
    let routes = [
        ("/ttl", "{strategy: memory, cache_ttl: 1}"),
        (
            "/stored",
            "{strategy: memory, cache_ttl: 1, storage_ttl: 30}",
        ),
        ("/cc", "{strategy: memory, cache_control: true}"),
    ];
    let gw = Gateway::builder(BIN)
        .config_yaml(&config(up.port(), &routes))
        .start();
    let max_age = |s: &'static str| [("x-echo-set-header", s)];
    let cc = |req: &'static str, resp: &'static str| {
        [("cache-control", req), ("x-echo-set-header", resp)]
    };

    assert_eq!(get(&gw, "/ttl", &[]).await.cache(), "Miss");
    assert_eq!(get(&gw, "/ttl", &[]).await.cache(), "Hit");
    assert_eq!(get(&gw, "/stored", &[]).await.cache(), "Miss");
    // Without a response TTL there is nothing to keep; with one it is kept; private is not.
    assert_eq!(get(&gw, "/cc/none", &[]).await.cache(), "Bypass");
    assert_eq!(get(&gw, "/cc/none", &[]).await.cache(), "Bypass");
    let kept = max_age("cache-control: max-age=60");
    assert_eq!(get(&gw, "/cc/kept", &kept).await.cache(), "Miss");
    assert_eq!(get(&gw, "/cc/kept", &kept).await.cache(), "Hit");
    let private = max_age("cache-control: private, max-age=60");
    assert_eq!(get(&gw, "/cc/private", &private).await.cache(), "Bypass");
    let short = max_age("cache-control: s-maxage=1, max-age=60");
    assert_eq!(get(&gw, "/cc/short", &short).await.cache(), "Miss");
    let expires = httpdate::fmt_http_date(std::time::SystemTime::now() + Duration::from_secs(60));
    let expires = format!("expires: {expires}");
    let by_date = [("x-echo-set-header", expires.as_str())];
    assert_eq!(get(&gw, "/cc/expires", &by_date).await.cache(), "Miss");
    assert_eq!(get(&gw, "/cc/expires", &by_date).await.cache(), "Hit");
    // The client's no-cache / no-store skip the cache; only-if-cached answers 504 on a miss.
    let no_cache = cc("no-cache", "cache-control: max-age=60");
    let bypass = get(&gw, "/cc/kept", &no_cache).await;
    assert_eq!(
        (bypass.cache(), bypass.header("x-cache-key")),
        ("Bypass", "")
    );
    assert_eq!(
        get(&gw, "/cc/kept", &cc("no-store", "x: y")).await.cache(),
        "Bypass"
    );
    let only = get(&gw, "/cc/absent", &[("cache-control", "only-if-cached")]).await;
    assert_eq!((only.status, only.cache()), (504, ""));
    assert!(only.body.is_empty());
    let cached = get(&gw, "/cc/kept", &[("cache-control", "only-if-cached")]).await;
    assert_eq!(cached.cache(), "Hit");
    assert_eq!(up.requests(), 10);

    tokio::time::sleep(Duration::from_millis(2100)).await;
    // Storage TTL = cache_ttl: gone. A longer storage_ttl: there but stale, so refreshed.
    assert_eq!(get(&gw, "/ttl", &[]).await.cache(), "Miss");
    assert_eq!(get(&gw, "/stored", &[]).await.cache(), "Refresh");
    assert_eq!(get(&gw, "/stored", &[]).await.cache(), "Hit");
    // s-maxage=1 outlived; the client's max-age / min-fresh ask for fresher than what is stored.
    assert_eq!(get(&gw, "/cc/short", &short).await.cache(), "Miss");
    let hit = get(&gw, "/cc/kept", &kept).await;
    assert_eq!(hit.cache(), "Hit");
    assert!(hit.header("age").parse::<u64>().unwrap() >= 2);
    assert_eq!(
        get(
            &gw,
            "/cc/kept",
            &cc("max-age=1", "cache-control: max-age=60")
        )
        .await
        .cache(),
        "Refresh"
    );
    assert_eq!(
        get(&gw, "/cc/kept", &cc("max-age=5", "x: y")).await.cache(),
        "Hit"
    );
    assert_eq!(
        get(
            &gw,
            "/cc/kept",
            &cc("min-fresh=61", "cache-control: max-age=60")
        )
        .await
        .cache(),
        "Refresh"
    );
    assert_eq!(up.requests(), 15);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admin_lookup_purges_and_reloads() {
    let up = EchoUpstream::start();
    let yaml = config(
        up.port(),
        &[("/c", "{strategy: memory}"), ("/d", "{strategy: memory}")],
    );
    let gw = Gateway::builder(BIN).config_yaml(&yaml).start();
    let admin =
        |method: reqwest::Method, path: &str| client().request(method, gw.admin_url(path)).send();
    let miss = get(&gw, "/c/a", &[]).await;
    let key = miss.header("x-cache-key").to_string();

    let found = admin(reqwest::Method::GET, &format!("/proxy-cache/{key}"))
        .await
        .unwrap();
    assert_eq!(found.status(), 200);
    let object: serde_json::Value = found.json().await.unwrap();
    assert_eq!(object["status"], 200);
    assert_eq!(object["body"].as_str().unwrap().as_bytes(), &miss.body[..]);
    assert_eq!(object["body_len"], miss.body.len());
    assert_eq!(object["headers"]["content-type"], "application/json");
    assert_eq!(object["ttl"], 300.0);
    assert_eq!(object["version"], 1);
    let by_plugin = format!("/proxy-cache/{PLUGIN}/caches/{key}");
    assert_eq!(
        admin(reqwest::Method::GET, &by_plugin)
            .await
            .unwrap()
            .status(),
        200
    );
    let other = "/proxy-cache/5d9c1f1e-0000-4000-8000-000000000001/caches/";
    assert_eq!(
        admin(reqwest::Method::GET, &format!("{other}{key}"))
            .await
            .unwrap()
            .status(),
        404
    );
    assert_eq!(
        admin(
            reqwest::Method::GET,
            &format!("/proxy-cache/{}", "0".repeat(64))
        )
        .await
        .unwrap()
        .status(),
        404
    );

    // A reload keeps the cache (Kong's shared dictionary outlives config changes).
    let reload = client()
        .post(gw.admin_url("/config"))
        .header("content-type", "text/yaml")
        .body(yaml.clone())
        .send()
        .await
        .unwrap();
    assert!(reload.status().is_success(), "{}", reload.status());
    assert_eq!(get(&gw, "/c/a", &[]).await.cache(), "Hit");

    // Purge one key, by any plugin or by its plugin, then everything.
    let purge = format!("/proxy-cache/{key}");
    assert_eq!(
        admin(reqwest::Method::DELETE, &purge)
            .await
            .unwrap()
            .status(),
        204
    );
    assert_eq!(
        admin(reqwest::Method::DELETE, &purge)
            .await
            .unwrap()
            .status(),
        404
    );
    assert_eq!(
        admin(reqwest::Method::GET, &purge).await.unwrap().status(),
        404
    );
    assert_eq!(get(&gw, "/c/a", &[]).await.cache(), "Miss");
    assert_eq!(
        admin(reqwest::Method::DELETE, &by_plugin)
            .await
            .unwrap()
            .status(),
        204
    );
    assert_eq!(get(&gw, "/c/a", &[]).await.cache(), "Miss");
    assert_eq!(get(&gw, "/d", &[]).await.cache(), "Miss");
    assert_eq!(
        admin(reqwest::Method::DELETE, "/proxy-cache")
            .await
            .unwrap()
            .status(),
        204
    );
    assert_eq!(get(&gw, "/c/a", &[]).await.cache(), "Miss");
    assert_eq!(get(&gw, "/d", &[]).await.cache(), "Miss");
    assert_eq!(get(&gw, "/d", &[]).await.cache(), "Hit");
    assert_eq!(up.requests(), 6);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_store_is_bounded_by_mem_cache_size() {
    let up = EchoUpstream::start();
    let gw = Gateway::builder(BIN)
        .config_yaml(&config(
            up.port(),
            &[("/c", "{strategy: memory, content_type: [text/plain]}")],
        ))
        .env("SLUICE_MEM_CACHE_SIZE", "64k")
        .start();
    let body = |n: &'static str| {
        [
            ("x-echo-body-size", n),
            ("x-echo-set-header", "content-type: text/plain"),
        ]
    };
    assert_eq!(get(&gw, "/c/big", &body("100000")).await.cache(), "Miss");
    assert_eq!(
        get(&gw, "/c/big", &body("100000")).await.cache(),
        "Miss",
        "larger than the store"
    );
    let mut keys = Vec::new();
    for i in 0..8 {
        let path = format!("/c/{i}");
        let miss = get(&gw, &path, &body("20000")).await;
        assert_eq!(miss.cache(), "Miss");
        keys.push(miss.header("x-cache-key").to_string());
        assert_eq!(get(&gw, &path, &body("20000")).await.cache(), "Hit");
    }
    // Looked up through the Admin API, which does not store anything.
    let mut kept = Vec::new();
    for (i, key) in keys.iter().enumerate() {
        let url = gw.admin_url(&format!("/proxy-cache/{key}"));
        if client().get(url).send().await.unwrap().status() == 200 {
            kept.push(i);
        }
    }
    assert!(
        (1..=3).contains(&kept.len()),
        "64k holds at most three 20k entries: {kept:?}"
    );
    assert!(kept.contains(&7), "the newest stays: {kept:?}");
}

/// A hit on a route whose other plugins filter headers, limit in `access` and log: the hit is answered
/// in `access` (before any task of the chain's exists), and still gets the other plugins' headers, the
/// gateway's, and a log record, as Kong runs `header_filter`, `body_filter` and `log` on
/// `kong.response.exit`'s responses.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hit_goes_through_the_other_plugins_phases() {
    let up = EchoUpstream::start();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("access.log");
    let yaml = format!(
        "_format_version: \"3.0\"\nservices:\n- name: s\n  url: http://127.0.0.1:{}\n  routes:\n  - paths: [/m]\n    id: {ROUTE}\n    plugins:\n    - name: proxy-cache\n      config: {{strategy: memory}}\n    - name: response-transformer\n      config: {{add: {{headers: [\"x-added:yes\"]}}}}\n    - name: rate-limiting\n      config: {{minute: 100, policy: local}}\n    - name: file-log\n      config: {{path: '{}'}}\n",
        up.port(),
        log.display()
    );
    let gw = Gateway::builder(BIN).config_yaml(&yaml).start();

    let miss = get(&gw, "/m/a", &[]).await;
    assert_eq!((miss.status, miss.cache()), (200, "Miss"));
    let hit = get(&gw, "/m/a", &[]).await;
    assert_eq!(up.requests(), 1, "the hit never reached the upstream");
    assert_eq!((hit.status, hit.cache()), (200, "Hit"));
    assert_eq!(hit.body, miss.body, "the stored body, byte for byte");
    assert_eq!(hit.header("x-cache-key"), miss.header("x-cache-key"));
    assert_eq!(hit.header("x-cache-key").len(), 64);
    assert!(
        ["0", "1"].contains(&hit.header("age")),
        "{}",
        hit.header("age")
    );
    assert_eq!(hit.header("content-type"), "application/json");
    assert_eq!(hit.header("content-length"), miss.body.len().to_string());
    // response-transformer's header_filter, rate-limiting's headers from access, the gateway's headers.
    assert_eq!(hit.header("x-added"), "yes");
    assert_eq!(hit.header("x-ratelimit-remaining-minute"), "98");
    assert_eq!(hit.header("ratelimit-remaining"), "98");
    assert!(hit.header("x-kong-response-latency").parse::<u64>().is_ok());
    assert_eq!(hit.header("x-kong-request-id").len(), 32);
    assert!(hit.header("server").starts_with("sluice/"));

    // file-log's record of each: the hit logged as the gateway's answer, with its cache headers.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let lines = loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        if lines.len() >= 2 || std::time::Instant::now() > deadline {
            break lines;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(lines.len(), 2, "one record per request");
    let hit_log = &lines[1]["response"];
    assert_eq!(hit_log["status"], 200);
    assert_eq!(hit_log["headers"]["x-cache-status"], "Hit");
    assert_eq!(hit_log["headers"]["x-added"], "yes");
}

#[test]
fn config_errors_are_kongs() {
    let up = EchoUpstream::start();
    let check = |conf: &str| {
        let yaml = config(up.port(), &[("/c", conf)]);
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("kong.yml");
        std::fs::write(&file, yaml).unwrap();
        let out = std::process::Command::new(BIN)
            .args(["config", "check"])
            .arg(&file)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr)
    };
    let redis = check("{strategy: redis}");
    assert!(redis.contains("expected one of: memory"), "{redis}");
    let missing = check("{cache_ttl: 5}");
    assert!(missing.contains("required field missing"), "{missing}");
    let codes = check("{strategy: memory, response_code: []}");
    assert!(codes.contains("length must be at least 1"), "{codes}");
    let method = check("{strategy: memory, request_method: [DELETE]}");
    assert!(
        method.contains("expected one of: HEAD, GET, POST, PATCH, PUT"),
        "{method}"
    );
}
