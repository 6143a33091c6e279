//! bot-detection and redirect through the real binary, with Kong's statuses, messages and headers; config
//! errors of these and of the transformers' header lists.

use sluice_testkit::{client, EchoUpstream, Gateway};

const BIN: &str = env!("CARGO_BIN_EXE_sluice");

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bot_detection_and_redirect_like_kong() {
    let up = EchoUpstream::start();
    let yaml = format!(
        r#"_format_version: "3.0"
services:
- name: s
  url: http://127.0.0.1:{}
  routes:
  - name: guarded
    paths: [/guarded]
    plugins:
    - {{name: bot-detection, config: {{allow: ["^MyCrawler"], deny: ["^curl/"]}}}}
  - name: moved
    paths: [/moved]
    plugins:
    - {{name: redirect, config: {{location: "https://new.test/landing"}}}}
  - name: kept
    paths: [/kept]
    plugins:
    - {{name: redirect, config: {{location: "https://new.test", status_code: 308, keep_incoming_path: true}}}}
"#,
        up.port()
    );
    let gw = Gateway::builder(BIN).config_yaml(&yaml).start();
    let get = |path: &str, agent: &str| {
        client()
            .get(gw.proxy_url(path))
            .header("user-agent", agent)
            .send()
    };
    let status = |r: reqwest::Response| r.status().as_u16();
    assert_eq!(
        status(get("/guarded", "Mozilla/5.0 Firefox/120.0").await.unwrap()),
        200
    );
    let denied = get("/guarded", "curl/8.5.0").await.unwrap();
    assert_eq!(denied.status(), 403);
    assert_eq!(denied.text().await.unwrap(), r#"{"message":"Forbidden"}"#);
    assert_eq!(status(get("/guarded", "Googlebot/2.1").await.unwrap()), 403);
    assert_eq!(
        status(get("/guarded", "MyCrawler bot/1.0").await.unwrap()),
        200
    );

    let redirect = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .build()
        .unwrap();
    let moved = redirect
        .get(gw.proxy_url("/moved/x?y=1"))
        .send()
        .await
        .unwrap();
    assert_eq!(moved.status(), 301);
    assert_eq!(moved.headers()["location"], "https://new.test/landing");
    assert_eq!(moved.text().await.unwrap(), "redirecting");
    let kept = redirect
        .get(gw.proxy_url("/kept/x?y=1"))
        .send()
        .await
        .unwrap();
    assert_eq!(kept.status(), 308);
    assert_eq!(kept.headers()["location"], "https://new.test/kept/x?y=1");
    assert_eq!(
        up.requests(),
        2,
        "only the two requests bot-detection let through reached the upstream"
    );
}

#[test]
fn bad_configs_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad.yml");
    std::fs::write(
        &file,
        concat!(
            "_format_version: \"3.0\"\nplugins:\n- name: bot-detection\n  config: {deny: [\"(\"]}\n",
            "- name: redirect\n  config: {location: /relative}\n",
            "- name: request-transformer\n  config: {add: {headers: [\"x-a:v\\r\\nX-Injected: 1\"]}}\n",
            "- name: response-transformer\n  config: {add: {headers: [\"bad header:1\"]}}\n",
        ),
    )
    .unwrap();
    let out = std::process::Command::new(BIN)
        .args(["config", "check"])
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("not a valid regex: ("), "{err}");
    assert!(err.contains("missing host in url"), "{err}");
    // Header values and names are checked at load (issue 17 defect 8), for both transformers.
    assert!(err.contains("is not a valid header value"), "{err}");
    assert!(err.contains("'bad header' is not a valid header"), "{err}");
}
