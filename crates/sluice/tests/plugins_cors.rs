//! The cors plugin through the real binary: preflights answered by the gateway or handed upstream, exact,
//! regex and `*` origins, credentials, exposed headers, private network, `allow_origin_absent`.

use sluice_testkit::{client, EchoUpstream, Gateway};

const BIN: &str = env!("CARGO_BIN_EXE_sluice");

fn config(port: u16) -> String {
    format!(
        r#"_format_version: "3.0"
services:
- name: s
  url: http://127.0.0.1:{port}
  routes:
  - name: full
    paths: [/full]
    plugins:
    - name: cors
      config:
        origins: ["https://app.test", "(.*)\\.example\\.test", "http://dev\\.test:\\d+"]
        methods: [GET, POST]
        headers: [x-custom, content-type]
        exposed_headers: [x-echo, x-total]
        max_age: 3600
        credentials: true
        private_network: true
  - name: open
    paths: [/open]
    plugins:
    - name: cors
  - name: single
    paths: [/single]
    plugins:
    - name: cors
      config: {{origins: ["https://only.test"], allow_origin_absent: false}}
  - name: star-credentials
    paths: [/star]
    plugins:
    - name: cors
      config: {{origins: ["*"], credentials: true}}
  - name: continue
    paths: [/continue]
    plugins:
    - name: cors
      config: {{preflight_continue: true}}
"#
    )
}

struct Resp {
    status: u16,
    headers: reqwest::header::HeaderMap,
    body: String,
}

impl Resp {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(|v| v.to_str().unwrap())
    }
}

async fn send(method: &str, url: String, headers: &[(&str, &str)]) -> Resp {
    let mut req = client().request(method.parse().unwrap(), &url);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let resp = req.send().await.unwrap_or_else(|e| panic!("{url}: {e}"));
    let (status, headers) = (resp.status().as_u16(), resp.headers().clone());
    let body = resp.text().await.unwrap();
    Resp {
        status,
        headers,
        body,
    }
}

fn preflight(origin: &str) -> [(&str, &str); 2] {
    [
        ("origin", origin),
        ("access-control-request-method", "POST"),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn preflight_answered_by_the_gateway() {
    let up = EchoUpstream::start();
    let gw = Gateway::builder(BIN)
        .config_yaml(&config(up.port()))
        .start();
    let mut headers = preflight("https://app.test").to_vec();
    headers.push(("access-control-request-private-network", "true"));
    let r = send("OPTIONS", gw.proxy_url("/full"), &headers).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body, "");
    assert_eq!(
        r.header("access-control-allow-origin"),
        Some("https://app.test")
    );
    assert_eq!(r.header("access-control-allow-credentials"), Some("true"));
    assert_eq!(r.header("access-control-allow-methods"), Some("GET,POST"));
    assert_eq!(
        r.header("access-control-allow-headers"),
        Some("x-custom,content-type")
    );
    assert_eq!(r.header("access-control-max-age"), Some("3600"));
    assert_eq!(
        r.header("access-control-allow-private-network"),
        Some("true")
    );
    assert_eq!(r.header("vary"), Some("Origin"));
    assert!(r.header("access-control-expose-headers").is_none());
    assert_eq!(up.requests(), 0, "the upstream never sees the preflight");

    // Defaults: every origin, every method, the requested headers echoed, no max-age.
    let mut headers = preflight("https://any.test").to_vec();
    headers.push(("access-control-request-headers", "x-a, x-b"));
    let r = send("OPTIONS", gw.proxy_url("/open"), &headers).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.header("access-control-allow-origin"), Some("*"));
    assert_eq!(
        r.header("access-control-allow-methods"),
        Some("GET,HEAD,PUT,PATCH,POST,DELETE,OPTIONS,TRACE,CONNECT")
    );
    assert_eq!(r.header("access-control-allow-headers"), Some("x-a, x-b"));
    assert!(r.header("access-control-max-age").is_none());
    assert!(r.header("access-control-allow-credentials").is_none());
    assert!(r.header("vary").is_none(), "'*' does not vary by origin");

    // An OPTIONS without Access-Control-Request-Method is not a preflight: proxied.
    let r = send(
        "OPTIONS",
        gw.proxy_url("/open"),
        &[("origin", "https://any.test")],
    )
    .await;
    assert_eq!(r.status, 200);
    assert_eq!(up.requests(), 1);
    assert_eq!(r.header("access-control-allow-origin"), Some("*"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn origins_exact_regex_and_rejected() {
    let up = EchoUpstream::start();
    let gw = Gateway::builder(BIN)
        .config_yaml(&config(up.port()))
        .start();
    let cases = [
        ("https://app.test", Some("https://app.test")),
        ("https://app.test:443", Some("https://app.test")),
        ("http://app.test", None),
        ("https://api.example.test", Some("https://api.example.test")),
        (
            "http://a.b.example.test:8080",
            Some("http://a.b.example.test:8080"),
        ),
        ("https://example.test.evil", None),
        ("http://dev.test:3000", Some("http://dev.test:3000")),
        ("https://dev.test:3000", None),
    ];
    for (origin, want) in cases {
        let r = send("GET", gw.proxy_url("/full"), &[("origin", origin)]).await;
        assert_eq!(r.status, 200, "{origin}");
        assert_eq!(r.header("access-control-allow-origin"), want, "{origin}");
        assert_eq!(r.header("vary"), Some("Origin"), "{origin}");
        assert_eq!(r.header("access-control-allow-credentials"), Some("true"));
        assert_eq!(
            r.header("access-control-expose-headers"),
            Some("x-echo,x-total")
        );
        assert!(r.header("access-control-allow-methods").is_none());
    }
    let r = send(
        "OPTIONS",
        gw.proxy_url("/full"),
        &preflight("https://nope.test"),
    )
    .await;
    assert_eq!(r.status, 200);
    assert!(r.header("access-control-allow-origin").is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn single_origin_star_credentials_and_absent_origin() {
    let up = EchoUpstream::start();
    let gw = Gateway::builder(BIN)
        .config_yaml(&config(up.port()))
        .start();
    // One plain origin is always sent; without an Origin nothing is added (allow_origin_absent: false).
    let r = send(
        "GET",
        gw.proxy_url("/single"),
        &[("origin", "https://else.test")],
    )
    .await;
    assert_eq!(
        r.header("access-control-allow-origin"),
        Some("https://only.test")
    );
    let r = send("GET", gw.proxy_url("/single"), &[]).await;
    assert!(r.header("access-control-allow-origin").is_none());
    assert!(r.header("vary").is_none());
    // allow_origin_absent (default true): '*' even without an Origin.
    let r = send("GET", gw.proxy_url("/open"), &[]).await;
    assert_eq!(r.header("access-control-allow-origin"), Some("*"));

    // '*' with credentials echoes the request's origin instead.
    let r = send(
        "GET",
        gw.proxy_url("/star"),
        &[("origin", "https://c.test")],
    )
    .await;
    assert_eq!(
        r.header("access-control-allow-origin"),
        Some("https://c.test")
    );
    assert_eq!(r.header("access-control-allow-credentials"), Some("true"));
    assert_eq!(r.header("vary"), Some("Origin"));
    let r = send("GET", gw.proxy_url("/star"), &[]).await;
    assert_eq!(r.header("access-control-allow-origin"), Some("*"));
    assert!(r.header("access-control-allow-credentials").is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn preflight_continue_reaches_the_upstream() {
    let up = EchoUpstream::start();
    let gw = Gateway::builder(BIN)
        .config_yaml(&config(up.port()))
        .start();
    let r = send(
        "OPTIONS",
        gw.proxy_url("/continue"),
        &preflight("https://x.test"),
    )
    .await;
    assert_eq!(r.status, 200);
    assert_eq!(up.requests(), 1);
    let echo: serde_json::Value = serde_json::from_str(&r.body).unwrap();
    assert_eq!(echo["method"], "OPTIONS");
    assert!(
        r.header("access-control-allow-origin").is_none(),
        "the upstream answers the preflight"
    );
}

#[test]
fn config_check_rejects_a_bad_regex_origin() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kong.yml");
    let yaml =
        "_format_version: \"3.0\"\nplugins:\n- name: cors\n  config: {origins: [\"(unclosed\"]}\n";
    std::fs::write(&path, yaml).unwrap();
    let out = std::process::Command::new(BIN)
        .args(["config", "check"])
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("'(unclosed' is not a valid regex"),
        "{stderr}"
    );
}
