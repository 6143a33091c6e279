//! Proxy behaviour of the real binary: routing rules, path joining, headers, upstream failures, balancing.

use serde_json::Value;
use sluice_testkit::{client, closed_port, h2c_client, EchoUpstream, Gateway, SilentServer};

const BIN: &str = env!("CARGO_BIN_EXE_sluice");

/// (request path, request headers, expected upstream path)
type Case = (
    &'static str,
    &'static [(&'static str, &'static str)],
    &'static str,
);

async fn echo(url: String, headers: &[(&str, &str)]) -> (u16, Value) {
    let (status, _, body) = sluice_testkit::get_json(&url, headers).await;
    (status, body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn routing_priorities_end_to_end() {
    let up = EchoUpstream::start();
    let p = up.port();
    let yaml = format!(
        r#"_format_version: "3.0"
services:
- name: a
  url: http://127.0.0.1:{p}/prefix
  routes:
  - {{name: short, paths: [/api]}}
  - {{name: long, paths: [/api/v1]}}
  - {{name: regex, paths: ["~/api/v1/items/\\d+$"], regex_priority: 1}}
  - {{name: hosted, hosts: [shop.test], paths: [/api]}}
  - {{name: headed, headers: {{x-beta: ["yes"]}}, paths: [/api]}}
  - {{name: posted, methods: [POST], paths: [/api]}}
- name: b
  url: http://127.0.0.1:{p}/host-only
  routes:
  - {{name: wildcard, hosts: ["*.wild.test"]}}
"#
    );
    let gw = Gateway::builder(BIN).config_yaml(&yaml).start();
    // (path, headers, expected upstream path)
    let cases: &[Case] = &[
        ("/api/x", &[], "/prefix/x"),
        ("/api/v1/x", &[], "/prefix/x"),
        ("/api/v1/items/42", &[], "/prefix"),
        ("/api/x", &[("host", "shop.test")], "/prefix/x"),
        ("/api/x", &[("x-beta", "YES")], "/prefix/x"),
        (
            "/whatever",
            &[("host", "a.wild.test")],
            "/host-only/whatever",
        ),
    ];
    for (path, headers, want) in cases {
        let (status, body) = echo(gw.proxy_url(path), headers).await;
        assert_eq!(status, 200, "{path} {headers:?}: {body}");
        assert_eq!(body["path"], *want, "{path} {headers:?}");
    }
    let post: Value = client()
        .post(gw.proxy_url("/api/z"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(post["method"], "POST");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn strip_path_preserve_host_and_path_handling() {
    let up = EchoUpstream::start();
    let p = up.port();
    let yaml = format!(
        r#"_format_version: "3.0"
services:
- name: s
  url: http://127.0.0.1:{p}/svc
  routes:
  - {{name: strip, paths: [/strip], strip_path: true}}
  - {{name: keep, paths: [/keep], strip_path: false, preserve_host: true}}
  - {{name: v1, paths: [/v1], path_handling: v1}}
- name: root
  url: http://127.0.0.1:{p}
  routes:
  - {{name: rootstrip, paths: [/r]}}
"#
    );
    let gw = Gateway::builder(BIN).config_yaml(&yaml).start();
    let host_hdr = format!("127.0.0.1:{p}");
    // (request path, expected upstream path, expected Host)
    let cases = [
        ("/strip/a?q=1", "/svc/a", host_hdr.as_str()),
        ("/strip", "/svc", host_hdr.as_str()),
        ("/keep/a", "/svc/keep/a", "client.test"),
        ("/v1abc", "/svcabc", host_hdr.as_str()),
        ("/r/x/y", "/x/y", host_hdr.as_str()),
        ("/r", "/", host_hdr.as_str()),
    ];
    for (path, want, host) in cases {
        let (_, body) = echo(gw.proxy_url(path), &[("host", "client.test")]).await;
        assert_eq!(body["path"], want, "{path}");
        assert_eq!(body["headers"]["host"], host, "{path}");
    }
    let (_, body) = echo(gw.proxy_url("/strip/a?q=1&b=%2F"), &[]).await;
    assert_eq!(body["query"], "q=1&b=%2F");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hop_by_hop_headers_are_dropped_and_h2c_works() {
    let up = EchoUpstream::start();
    let yaml = format!(
        "_format_version: \"3.0\"\nservices:\n- name: s\n  url: http://127.0.0.1:{}\n  routes:\n  - paths: [/]\n",
        up.port()
    );
    let gw = Gateway::builder(BIN).config_yaml(&yaml).start();
    let (_, body) = echo(
        gw.proxy_url("/"),
        &[
            ("connection", "x-secret"),
            ("x-secret", "1"),
            ("x-kept", "2"),
        ],
    )
    .await;
    assert!(body["headers"].get("x-secret").is_none(), "{body}");
    assert_eq!(body["headers"]["x-kept"], "2");
    let resp = h2c_client().get(gw.proxy_url("/h2")).send().await.unwrap();
    assert_eq!(resp.version(), reqwest::Version::HTTP_2);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["path"], "/h2");
    let big = client()
        .get(gw.proxy_url("/"))
        .header("x-echo-body-size", "3000000")
        .send()
        .await
        .unwrap();
    assert_eq!(big.bytes().await.unwrap().len(), 3_000_000);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstream_failures_get_kongs_status_codes_and_retries_find_a_live_target() {
    let up = EchoUpstream::start();
    let silent = SilentServer::start();
    let (dead, live, quiet) = (closed_port(), up.port(), silent.port());
    let yaml = format!(
        r#"_format_version: "3.0"
services:
- {{name: refused, url: "http://127.0.0.1:{dead}", retries: 0, routes: [{{paths: [/refused]}}]}}
- {{name: slow, url: "http://127.0.0.1:{quiet}", read_timeout: 300, write_timeout: 100, routes: [{{paths: [/slow]}}]}}
- {{name: nobody, host: empty.upstream, routes: [{{paths: [/nobody]}}]}}
- {{name: mixed, host: mixed.upstream, retries: 3, routes: [{{paths: [/mixed]}}]}}
upstreams:
- name: empty.upstream
  targets: [{{target: "127.0.0.1:{live}", weight: 0}}]
- name: mixed.upstream
  targets: [{{target: "127.0.0.1:{dead}"}}, {{target: "127.0.0.1:{live}"}}]
"#
    );
    let gw = Gateway::builder(BIN).config_yaml(&yaml).start();
    let cases = [
        (
            "/refused",
            502,
            "An invalid response was received from the upstream server",
        ),
        ("/slow", 504, "The upstream server is timing out"),
        (
            "/nobody",
            503,
            "failure to get a peer from the ring-balancer",
        ),
    ];
    for (path, status, message) in cases {
        let (got, body) = echo(gw.proxy_url(path), &[]).await;
        assert_eq!(
            (got, body["message"].as_str()),
            (status, Some(message)),
            "{path}"
        );
        assert!(body["request_id"].is_string());
    }
    for _ in 0..20 {
        assert_eq!(echo(gw.proxy_url("/mixed"), &[]).await.0, 200);
    }
    let html = client()
        .get(gw.proxy_url("/refused"))
        .header("accept", "text/html")
        .send()
        .await
        .unwrap();
    assert!(html.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/html"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn weighted_round_robin_splits_by_weight() {
    let (a, b) = (EchoUpstream::named("a"), EchoUpstream::named("b"));
    let yaml = format!(
        r#"_format_version: "3.0"
services: [{{name: s, host: pool.upstream, routes: [{{paths: [/]}}]}}]
upstreams:
- name: pool.upstream
  targets: [{{target: "127.0.0.1:{}", weight: 300}}, {{target: "127.0.0.1:{}", weight: 100}}]
"#,
        a.port(),
        b.port()
    );
    let gw = Gateway::builder(BIN).config_yaml(&yaml).start();
    for _ in 0..400 {
        assert_eq!(echo(gw.proxy_url("/"), &[]).await.0, 200);
    }
    assert_eq!((a.requests(), b.requests()), (300, 100));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_only_routes_and_request_termination() {
    let up = EchoUpstream::start();
    let yaml = format!(
        r#"_format_version: "3.0"
services:
- name: s
  url: http://127.0.0.1:{}
  routes:
  - {{name: tls, protocols: [https], paths: [/tls]}}
  - {{name: moved, protocols: [https], paths: [/moved], https_redirect_status_code: 308}}
  - name: closed
    paths: [/closed]
    plugins:
    - name: request-termination
      config: {{status_code: 418, message: "gone fishing", trigger: x-stop}}
"#,
        up.port()
    );
    let gw = Gateway::builder(BIN).config_yaml(&yaml).start();
    let (status, body) = echo(gw.proxy_url("/tls"), &[]).await;
    assert_eq!(
        (status, body["message"].as_str()),
        (426, Some("Please use HTTPS protocol"))
    );
    let no_redirect = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .build()
        .unwrap();
    let moved = no_redirect
        .get(gw.proxy_url("/moved/x?y=1"))
        .header("host", "api.test:8000")
        .send()
        .await
        .unwrap();
    assert_eq!(moved.status(), 308);
    assert_eq!(moved.headers()["location"], "https://api.test/moved/x?y=1");
    assert_eq!(echo(gw.proxy_url("/closed"), &[]).await.0, 200);
    let (status, body) = echo(gw.proxy_url("/closed"), &[("x-stop", "1")]).await;
    assert_eq!(
        (status, body["message"].as_str()),
        (418, Some("gone fishing"))
    );
    assert_eq!(up.requests(), 1);
}
