//! Origin matching and the plugin's phases on a compiled chain.

use super::origins::{normalize, Allowed, Origins};
use crate::testing::{block_on, compile, request};
use crate::RequestCtx;

fn origins(list: &[&str]) -> Origins {
    Origins::new(&list.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap()
}

fn allowed(o: &Origins, origin: &str) -> Option<String> {
    match o.check(Some(origin)) {
        Allowed::All { .. } => Some("*".into()),
        Allowed::Origin(v) => Some(v.to_str().unwrap().into()),
        Allowed::None => None,
    }
}

#[test]
fn normalizes_origins() {
    assert_eq!(normalize("https://a.test:443").0, "https://a.test");
    assert_eq!(normalize("http://a.test:80/x").0, "http://a.test");
    assert_eq!(normalize("http://a.test:8080").0, "http://a.test:8080");
    assert_eq!(normalize("http://a.test:8080").1, "a.test");
    assert_eq!(normalize("http://[::1]:8080").0, "http://[::1]:8080");
    assert_eq!(normalize("a.test").0, "a.test");
}

#[test]
fn matches_origins_like_kong() {
    assert_eq!(
        allowed(&origins(&[]), "http://x.test").as_deref(),
        Some("*")
    );
    assert_eq!(
        allowed(&origins(&["*"]), "http://x.test").as_deref(),
        Some("*")
    );
    // One plain origin is sent whatever the request's origin.
    let one = origins(&["https://a.test"]);
    assert_eq!(
        allowed(&one, "http://x.test").as_deref(),
        Some("https://a.test")
    );

    let list = origins(&["https://a.test", r"(.*)\.b\.test", r"http://c\.test:\d+"]);
    assert_eq!(
        allowed(&list, "https://a.test:443").as_deref(),
        Some("https://a.test")
    );
    assert_eq!(allowed(&list, "http://a.test"), None);
    assert_eq!(
        allowed(&list, "https://x.b.test").as_deref(),
        Some("https://x.b.test"),
        "regexes without ':' match the host"
    );
    assert_eq!(
        allowed(&list, "https://x.b.test.evil"),
        None,
        "anchored at the end"
    );
    assert_eq!(allowed(&list, "https://b.test"), None);
    assert_eq!(
        allowed(&list, "http://c.test:81").as_deref(),
        Some("http://c.test:81"),
        "regexes with ':' match scheme://host:port"
    );
    assert_eq!(
        allowed(&list, "https://c.test:81"),
        None,
        "anchored at the start"
    );
    assert_eq!(
        allowed(&origins(&["https://a.test", "*"]), "http://z.test").as_deref(),
        Some("*")
    );
    assert!(matches!(list.check(None), Allowed::None));
}

const CONFIG: &str = r#"
_format_version: "3.0"
services:
- name: s
  url: http://127.0.0.1:1
  routes:
  - name: r
    paths: [/]
    plugins:
    - name: cors
      config:
        origins: ["https://a.test", "(.*)\\.b\\.test"]
        headers: [x-one, x-two]
        exposed_headers: [x-exposed]
        methods: [GET, POST]
        max_age: 600
        credentials: true
        private_network: true
"#;

#[test]
fn preflight_is_answered() {
    let (_, compiled) = compile(CONFIG);
    let chain = compiled.route_chain(0);
    let head = request(
        "OPTIONS",
        "/",
        &[
            ("origin", "https://x.b.test"),
            ("access-control-request-method", "POST"),
            ("access-control-request-private-network", "true"),
        ],
    );
    let mut ctx = RequestCtx::detached(head, compiled.credentials());
    let resp = block_on(chain.access(&mut ctx)).expect("preflight answered");
    assert_eq!(resp.status, 200);
    let h = &resp.headers;
    assert_eq!(h["access-control-allow-origin"], "https://x.b.test");
    assert_eq!(h["access-control-allow-credentials"], "true");
    assert_eq!(h["access-control-allow-headers"], "x-one,x-two");
    assert_eq!(h["access-control-allow-methods"], "GET,POST");
    assert_eq!(h["access-control-max-age"], "600");
    assert_eq!(h["access-control-allow-private-network"], "true");
    assert_eq!(h["vary"], "Origin");
    assert!(resp.body.is_empty());
}

#[test]
fn actual_requests_get_headers_in_header_filter() {
    let (_, compiled) = compile(CONFIG);
    let chain = compiled.route_chain(0);
    let head = request("GET", "/", &[("origin", "https://a.test")]);
    let mut ctx = RequestCtx::detached(head, compiled.credentials());
    assert!(block_on(chain.access(&mut ctx)).is_none());
    let mut resp = http::Response::builder()
        .header("vary", "Accept")
        .body(())
        .unwrap()
        .into_parts()
        .0;
    chain.header_filter(&mut ctx, &mut resp);
    let h = &resp.headers;
    assert_eq!(h["access-control-allow-origin"], "https://a.test");
    assert_eq!(h["access-control-allow-credentials"], "true");
    assert_eq!(h["access-control-expose-headers"], "x-exposed");
    let vary: Vec<_> = h.get_all("vary").iter().collect();
    assert_eq!(vary, ["Accept", "Origin"]);
    assert!(h.get("access-control-allow-methods").is_none());
}
