//! Kong's plugins through the real binary: key-auth, basic-auth, rate-limiting, precedence, reloads.

use base64::Engine;
use serde_json::Value;
use sluice_testkit::{client, EchoUpstream, Gateway};

const BIN: &str = env!("CARGO_BIN_EXE_sluice");

fn config(port: u16, extra_route_plugins: &str) -> String {
    format!(
        r#"_format_version: "3.0"
services:
- name: s
  url: http://127.0.0.1:{port}
  routes:
  - name: keyed
    paths: [/keyed]
    plugins:
    - name: key-auth
      config: {{hide_credentials: true}}
{extra_route_plugins}
  - name: basic
    paths: [/basic]
    plugins:
    - name: basic-auth
  - name: open
    paths: [/open]
    plugins:
    - name: key-auth
      config: {{anonymous: guest, key_names: [x-key]}}
consumers:
- username: alice
  custom_id: A1
  keyauth_credentials: [{{key: alice-key}}]
  basicauth_credentials: [{{username: alice, password: "s3cret"}}]
- username: bob
  keyauth_credentials: [{{key: bob-key}}]
  plugins:
  - name: rate-limiting
    route: keyed
    config: {{minute: 2}}
- username: guest
"#
    )
}

async fn get(url: String, headers: &[(&str, &str)]) -> (u16, reqwest::header::HeaderMap, Value) {
    sluice_testkit::get_json(&url, headers).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn key_auth_like_kong() {
    let up = EchoUpstream::start();
    let gw = Gateway::builder(BIN)
        .config_yaml(&config(up.port(), ""))
        .start();
    let (status, headers, body) = get(gw.proxy_url("/keyed"), &[]).await;
    assert_eq!(
        (status, body["message"].as_str()),
        (401, Some("No API key found in request"))
    );
    assert_eq!(headers["www-authenticate"], "Key realm=\"kong\"");
    let (status, _, body) = get(gw.proxy_url("/keyed"), &[("apikey", "wrong")]).await;
    assert_eq!(
        (status, body["message"].as_str()),
        (401, Some("Unauthorized"))
    );

    let (status, _, echo) = get(
        gw.proxy_url("/keyed"),
        &[("apikey", "alice-key"), ("x-consumer-username", "forged")],
    )
    .await;
    assert_eq!(status, 200);
    let h = &echo["headers"];
    assert_eq!(h["x-consumer-username"], "alice");
    assert_eq!(h["x-consumer-custom-id"], "A1");
    assert!(h["x-consumer-id"].is_string() && h["x-credential-identifier"].is_string());
    assert!(
        h.get("apikey").is_none(),
        "hide_credentials removes the key"
    );
    let (status, _, echo) = get(gw.proxy_url("/keyed?apikey=alice-key&x=1"), &[]).await;
    assert_eq!(status, 200);
    assert_eq!(echo["query"], "x=1");

    let (status, _, echo) = get(gw.proxy_url("/open"), &[]).await;
    assert_eq!(status, 200);
    assert_eq!(echo["headers"]["x-consumer-username"], "guest");
    assert_eq!(echo["headers"]["x-anonymous-consumer"], "true");
    let (_, _, echo) = get(gw.proxy_url("/open"), &[("x-key", "bob-key")]).await;
    assert_eq!(echo["headers"]["x-consumer-username"], "bob");
    assert!(echo["headers"].get("x-anonymous-consumer").is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn basic_auth_like_kong() {
    let up = EchoUpstream::start();
    let gw = Gateway::builder(BIN)
        .config_yaml(&config(up.port(), ""))
        .start();
    let b64 = |s: &str| {
        format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(s)
        )
    };
    let (status, headers, _) = get(gw.proxy_url("/basic"), &[]).await;
    assert_eq!(status, 401);
    assert_eq!(headers["www-authenticate"], "Basic realm=\"service\"");
    for bad in [
        b64("alice:nope"),
        b64("nobody:s3cret"),
        "Basic %%%".into(),
        b64("no-colon"),
        "Bearer x".into(),
    ] {
        let (status, _, body) = get(gw.proxy_url("/basic"), &[("authorization", &bad)]).await;
        assert_eq!(
            (status, body["message"].as_str()),
            (401, Some("Unauthorized")),
            "{bad}"
        );
    }
    let (status, _, echo) = get(
        gw.proxy_url("/basic"),
        &[("authorization", &b64("alice:s3cret"))],
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(echo["headers"]["x-consumer-username"], "alice");
    // Kong's basic-auth names the credential by its username.
    assert_eq!(echo["headers"]["x-credential-identifier"], "alice");
    // The Admin API never shows the plain password.
    let creds: Value = client()
        .get(gw.admin_url("/basic-auths"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let stored = creds["data"][0]["password"].as_str().unwrap();
    assert_ne!(stored, "s3cret");
    assert_eq!(stored.len(), 40);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rate_limits_count_exactly_and_survive_reloads() {
    let up = EchoUpstream::start();
    let limited = "    - name: rate-limiting\n      config: {minute: 20, hour: 1000}\n";
    let yaml = config(up.port(), limited);
    let gw = Gateway::builder(BIN).config_yaml(&yaml).start();
    // 60 concurrent requests by alice: exactly 20 pass in this minute (unless the minute rolls over mid-test,
    // in which case up to 40 may: measure the window and allow for it).
    let minute =
        |t: std::time::SystemTime| t.duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() / 60;
    let before = minute(std::time::SystemTime::now());
    let mut tasks = Vec::new();
    for _ in 0..60 {
        let url = gw.proxy_url("/keyed");
        tasks.push(tokio::spawn(async move {
            let resp = client()
                .get(url)
                .header("apikey", "alice-key")
                .send()
                .await
                .unwrap();
            (resp.status().as_u16(), resp.headers().clone())
        }));
    }
    let mut passed = 0;
    let mut refused = None;
    for t in tasks {
        let (status, headers) = t.await.unwrap();
        match status {
            200 => passed += 1,
            429 => refused = Some(headers),
            other => panic!("unexpected status {other}"),
        }
    }
    let rolled = minute(std::time::SystemTime::now()) != before;
    if !rolled {
        assert_eq!(passed, 20);
    }
    let refused = refused.expect("some requests must be refused");
    assert!(refused.contains_key("retry-after"));
    assert_eq!(refused["x-ratelimit-limit-minute"], "20");
    assert_eq!(refused["x-ratelimit-remaining-minute"], "0");
    assert_eq!(refused["ratelimit-remaining"], "0");
    assert_eq!(refused["ratelimit-limit"], "20");
    let reset: u64 = refused["ratelimit-reset"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        (1..=60).contains(&reset),
        "seconds left in the minute: {reset}"
    );
    assert_eq!(refused["retry-after"], refused["ratelimit-reset"]);

    // bob gets his own counter, and his consumer-scoped config (2/minute) wins over the route's.
    let (status, headers, _) = get(gw.proxy_url("/keyed"), &[("apikey", "bob-key")]).await;
    assert_eq!(status, 200);
    assert_eq!(headers["x-ratelimit-limit-minute"], "2");
    assert!(!headers.contains_key("x-ratelimit-limit-hour"));

    // Reloading the same config keeps alice's counter (same plugin id): still refused.
    let reload = client()
        .post(gw.admin_url("/config"))
        .header("content-type", "application/x-yaml")
        .body(yaml);
    assert_eq!(reload.send().await.unwrap().status(), 201);
    if !rolled && minute(std::time::SystemTime::now()) == before {
        let (status, _, body) = get(gw.proxy_url("/keyed"), &[("apikey", "alice-key")]).await;
        assert_eq!(
            (status, body["message"].as_str()),
            (429, Some("API rate limit exceeded"))
        );
    }
}

#[test]
fn bad_plugin_configs_are_rejected_with_field_paths() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad.yml");
    std::fs::write(
        &file,
        r#"_format_version: "3.0"
plugins:
- name: rate-limiting
  config: {policy: redis, minute: 10}
- name: rate-limiting
  instance_name: cluster
  config: {policy: cluster, minute: 10}
- name: rate-limiting
  instance_name: second
  config: {second: 10, minute: 5}
- name: rate-limiting
  instance_name: empty
  config: {}
- name: key-auth
  config: {key_names: [], bogus: 1}
"#,
    )
    .unwrap();
    let out = std::process::Command::new(BIN)
        .args(["config", "check"])
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    for needle in [
        "config.redis.host: required field missing",
        "config.policy: policy 'cluster' needs a database",
        "The limit for minute(5.0) cannot be lower than the limit for second(10.0)",
        "at least one of these fields must be non-empty",
        "config.key_names: length must be at least 1",
        "config.bogus: unknown field",
    ] {
        assert!(err.contains(needle), "missing {needle:?} in:\n{err}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acl_ip_restriction_and_correlation_id() {
    let up = EchoUpstream::start();
    let yaml = format!(
        r#"_format_version: "3.0"
services:
- name: s
  url: http://127.0.0.1:{}
  routes:
  - name: staff
    paths: [/staff]
    plugins:
    - {{name: key-auth}}
    - {{name: acl, config: {{allow: [staff]}}}}
  - name: blocked
    paths: [/blocked]
    plugins:
    - {{name: ip-restriction, config: {{deny: [127.0.0.0/8], status: 451, message: "not from here"}}}}
  - name: allowed
    paths: [/allowed]
    plugins:
    - {{name: ip-restriction, config: {{allow: ["127.0.0.1"]}}}}
plugins:
- name: correlation-id
  config: {{echo_downstream: true}}
consumers:
- username: alice
  keyauth_credentials: [{{key: alice-key}}]
  acls: [{{group: staff}}, {{group: dev}}]
- username: bob
  keyauth_credentials: [{{key: bob-key}}]
"#,
        up.port()
    );
    let gw = Gateway::builder(BIN).config_yaml(&yaml).start();
    let (status, headers, echo) = get(gw.proxy_url("/staff"), &[("apikey", "alice-key")]).await;
    assert_eq!(status, 200);
    assert_eq!(echo["headers"]["x-consumer-groups"], "staff, dev");
    let id = headers["kong-request-id"].to_str().unwrap().to_string();
    assert_eq!(echo["headers"]["kong-request-id"], id.as_str());
    assert!(id.contains('#'), "uuid#counter: {id}");
    let (status, _, body) = get(gw.proxy_url("/staff"), &[("apikey", "bob-key")]).await;
    assert_eq!(
        (status, body["message"].as_str()),
        (403, Some("You cannot consume this service"))
    );
    let (status, _, body) = get(gw.proxy_url("/blocked"), &[]).await;
    assert_eq!(
        (status, body["message"].as_str()),
        (451, Some("not from here"))
    );
    assert_eq!(get(gw.proxy_url("/allowed"), &[]).await.0, 200);
    let (_, headers, echo) = get(gw.proxy_url("/allowed"), &[("kong-request-id", "mine")]).await;
    assert_eq!(echo["headers"]["kong-request-id"], "mine");
    assert_eq!(headers["kong-request-id"], "mine");
}
