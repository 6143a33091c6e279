//! The plugin path: early answers, authentication, headers plugins add, and a test plugin that sees
//! `header_filter`, `body_filter` and `log` (after the body was sent, and for requests without a route).

mod common;

use bytes::Bytes;
use common::{get, one_service, Proxy};
use sluice_model::schema::Schema;
use sluice_plugins::registry::{BuildCtx, Builtin};
use sluice_plugins::{Flow, LogRecord, Plugin, PluginResponse, Registered, Registry, RequestCtx};
use sluice_proxy::ProxySettings;
use sluice_testkit::{client, EchoUpstream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plugins_answer_before_the_service_is_needed() {
    let yaml = r#"_format_version: "3.0"
routes:
- name: closed
  paths: [/closed]
  plugins:
  - {name: request-termination, config: {status_code: 418, message: "gone fishing"}}
"#;
    let proxy = Proxy::start(yaml);
    let (status, headers, body) = get(proxy.url("/closed"), []).await;
    assert_eq!(
        (status, body["message"].as_str()),
        (418, Some("gone fishing"))
    );
    assert_eq!(headers["server"], sluice_proxy::PRODUCT);
    assert!(headers.contains_key("x-kong-response-latency"));
    assert_eq!(headers["x-kong-request-id"].len(), 32);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn key_auth_identifies_consumers_and_hides_keys() {
    let up = EchoUpstream::start();
    let yaml = format!(
        r#"_format_version: "3.0"
services:
- name: s
  url: {}
  routes:
  - name: r
    paths: [/]
    plugins: [{{name: key-auth, config: {{hide_credentials: true}}}}]
consumers:
- username: alice
  keyauth_credentials: [{{key: secret-key}}]
"#,
        up.url()
    );
    let proxy = Proxy::start(&yaml);
    let (status, headers, _) = get(proxy.url("/x"), []).await;
    assert_eq!(status, 401);
    assert!(headers.contains_key("www-authenticate"));
    let (status, _, body) = get(proxy.url("/x?a=1&apikey=secret-key&b=2"), []).await;
    assert_eq!(status, 200);
    assert_eq!(body["headers"]["x-consumer-username"], "alice");
    assert_eq!(body["query"], "a=1&b=2");
    assert_eq!(body["path"], "/x");
    let (status, _, body) = get(proxy.url("/y"), [("apikey", "secret-key")]).await;
    assert_eq!(status, 200);
    assert!(body["headers"].get("apikey").is_none());
    assert_eq!(up.requests(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn headers_from_plugins_reach_proxied_and_refused_responses() {
    let up = EchoUpstream::start();
    let yaml = format!(
        "{}plugins:\n- {{name: rate-limiting, config: {{minute: 2, hour: 100}}}}\n",
        one_service(&up.url(), &["paths: [/]"])
    );
    let proxy = Proxy::start(&yaml);
    for remaining in ["1", "0"] {
        let (status, headers, _) = get(proxy.url("/"), []).await;
        assert_eq!(status, 200);
        assert_eq!(headers["x-ratelimit-remaining-minute"], remaining);
    }
    let (status, headers, _) = get(proxy.url("/"), []).await;
    assert_eq!(status, 429);
    assert!(headers.contains_key("retry-after"));
    // As Kong: the refused request is taken off only the period that stopped it.
    assert_eq!(headers["x-ratelimit-remaining-minute"], "0");
    assert_eq!(headers["x-ratelimit-remaining-hour"], "98");
    assert_eq!(headers["ratelimit-remaining"], "0");
    assert_eq!(up.requests(), 2);
}

/// What the test plugin's log phase saw: (path, status, response bytes, source).
static LOGGED: Mutex<Vec<(String, u16, u64, &'static str)>> = Mutex::new(Vec::new());

/// A plugin that marks headers, upper-cases bodies and records its log phase.
struct Shouting;

impl Shouting {
    fn header_filter(&self, _: &mut RequestCtx<'_>, response: &mut http::response::Parts) {
        response.headers.insert("x-shouted", "yes".parse().unwrap());
    }

    fn body_filter(&self, _: &mut RequestCtx<'_>, chunk: &mut Bytes, eof: bool) {
        let mut upper = chunk.to_ascii_uppercase();
        if eof {
            upper.extend_from_slice(b"!");
        }
        *chunk = Bytes::from(upper);
    }

    fn log(&self, ctx: &RequestCtx<'_>, record: &LogRecord) {
        let path = ctx.request.uri.path().to_string();
        let entry = (path, record.status, record.response_bytes, record.source);
        LOGGED.lock().unwrap().push(entry);
    }
}

fn shouting() -> Builtin {
    fn build(_: &BuildCtx<'_>, _: &sluice_model::Plugin) -> Result<Arc<dyn Plugin>, String> {
        Ok(Registered::new("shouting", Shouting)
            .header_filter(Shouting::header_filter)
            .body_filter(Shouting::body_filter)
            .log(Shouting::log)
            .build())
    }
    Builtin::new("shouting", 5, Schema::default(), build)
}

async fn logged(path: &str) -> (String, u16, u64, &'static str) {
    for _ in 0..200 {
        if let Some(e) = LOGGED.lock().unwrap().iter().find(|e| e.0 == path) {
            return e.clone();
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("no log entry for {path}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn header_body_and_log_phases_run_around_the_upstream() {
    let up = EchoUpstream::start();
    let yaml = format!(
        "{}plugins:\n- name: shouting\n",
        one_service(&up.url(), &["paths: [/loud]"])
    );
    let proxy = Proxy::with(
        &yaml,
        ProxySettings::default(),
        Registry::with(vec![shouting()]),
    );
    let resp = client()
        .get(proxy.url("/loud"))
        .header("x-echo-body-size", "70000")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.headers()["x-shouted"], "yes");
    assert!(!resp.headers().contains_key("content-length"));
    let body = resp.bytes().await.unwrap();
    assert_eq!(body.len(), 70_001);
    assert!(body[..70_000].iter().all(|b| *b == b'A') && body.ends_with(b"!"));
    assert_eq!(
        logged("/loud").await,
        ("/loud".to_string(), 200, 70_001, "upstream")
    );

    let (status, headers, _) = get(proxy.url("/nowhere"), []).await;
    assert_eq!(status, 404);
    assert_eq!(headers["x-shouted"], "yes");
    let (_, status, _, source) = logged("/nowhere").await;
    assert_eq!((status, source), (404, "gateway"));
}

/// What the test rewrite plugin saw in `access`, after routing: (path, a route was matched).
static ACCESSED: Mutex<Vec<(String, bool)>> = Mutex::new(Vec::new());

/// A plugin with a `rewrite` handler: before the router it moves `/old/...` to `/new/...` and adds a
/// response header, and answers `/refused` itself; its `access` records what it sees after routing.
struct Renaming;

impl Renaming {
    fn rewrite(&self, ctx: &mut RequestCtx<'_>) -> Flow {
        assert!(
            ctx.route.is_none() && ctx.service.is_none(),
            "rewrite runs before the router"
        );
        let path = ctx.request.uri.path().to_string();
        if path == "/refused" {
            return Flow::Respond(PluginResponse::message(
                http::StatusCode::IM_A_TEAPOT,
                "refused in rewrite",
            ));
        }
        if let Some(rest) = path.strip_prefix("/old/") {
            ctx.request.uri = format!("/new/{rest}").parse().unwrap();
        }
        ctx.response_headers.insert(
            http::HeaderName::from_static("x-rewritten"),
            "yes".parse().unwrap(),
        );
        Flow::Continue
    }

    fn access(&self, ctx: &mut RequestCtx<'_>) -> Flow {
        let entry = (ctx.request.uri.path().to_string(), ctx.route.is_some());
        ACCESSED.lock().unwrap().push(entry);
        Flow::Continue
    }
}

fn renaming() -> Builtin {
    fn build(_: &BuildCtx<'_>, _: &sluice_model::Plugin) -> Result<Arc<dyn Plugin>, String> {
        Ok(Registered::new("renaming", Renaming)
            .rewrite(Renaming::rewrite)
            .access(Renaming::access)
            .build())
    }
    Builtin::new("renaming", 5, Schema::default(), build)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_global_rewrite_runs_before_the_router_which_routes_its_result() {
    let up = EchoUpstream::start();
    let yaml = format!(
        "{}plugins:\n- name: renaming\n",
        one_service(&up.url(), &["paths: [/new], strip_path: false"])
    );
    let proxy = Proxy::with(
        &yaml,
        ProxySettings::default(),
        Registry::with(vec![renaming()]),
    );
    // No route has /old: the request reaches the upstream only because rewrite ran before routing.
    let (status, headers, body) = get(proxy.url("/old/thing?q=1"), []).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["path"], "/new/thing");
    assert_eq!(headers["x-rewritten"], "yes");
    let accessed = ACCESSED.lock().unwrap().clone();
    assert!(
        accessed.contains(&("/new/thing".to_string(), true)),
        "{accessed:?}"
    );

    // An answer in rewrite: no routing, no upstream, Kong's headers.
    let before = up.requests();
    let (status, headers, body) = get(proxy.url("/refused"), []).await;
    assert_eq!(
        (status, body["message"].as_str()),
        (418, Some("refused in rewrite"))
    );
    assert_eq!(headers["server"], sluice_proxy::PRODUCT);
    assert_eq!(up.requests(), before);

    // Still a 404 where the rewritten path has no route either.
    let (status, headers, _) = get(proxy.url("/elsewhere"), []).await;
    assert_eq!(status, 404);
    assert_eq!(headers["x-rewritten"], "yes");
}

/// The headers an access-only plugin adds reach the client after Kong's, and replace the upstream's own
/// fields of their names, whether the head is written with them appended (HTTP/1.1) or from the map.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn headers_plugins_add_replace_the_upstreams() {
    let up = EchoUpstream::start();
    let route = "paths: [/], plugins: [{name: rate-limiting, config: {minute: 100}}]";
    let yaml = one_service(&up.url(), &[route]);
    let proxy = Proxy::start(&yaml);
    let (status, headers, _) = get(
        proxy.url("/x"),
        [
            ("x-echo-set-header", "ratelimit-limit: 999"),
            ("x-echo-set-header", "x-ratelimit-remaining-minute: 999"),
            ("x-echo-set-header", "x-up: kept"),
        ],
    )
    .await;
    assert_eq!(status, 200);
    let all = |name| headers.get_all(name).iter().collect::<Vec<_>>();
    assert_eq!(all("ratelimit-limit"), ["100"]);
    assert_eq!(all("x-ratelimit-remaining-minute"), ["99"]);
    assert_eq!(headers["x-up"], "kept");
    assert_eq!(all("x-kong-request-id").len(), 1);
    assert_eq!(
        headers["via"],
        format!("1.1 {}", sluice_proxy::PRODUCT).as_str()
    );
}
