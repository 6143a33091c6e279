//! request-transformer on a compiled chain: Kong's order and add/replace/append semantics.

use crate::testing::{block_on, compile, request};
use crate::RequestCtx;
use serde_json::{json, Value};

fn config(plugin_config: &str) -> String {
    format!(
        r#"
_format_version: "3.0"
services:
- name: s
  url: http://127.0.0.1:1
  routes:
  - name: r
    paths: ["~/users/(?<id>\\d+)$", /]
    plugins:
    - name: request-transformer
      config: {plugin_config}
"#
    )
}

/// Runs the access phase; returns the request head and body after the plugin.
fn run(
    plugin_config: &str,
    head: http::request::Parts,
    body: Option<&str>,
) -> (http::request::Parts, Option<String>) {
    let (_, compiled) = compile(&config(plugin_config));
    let chain = compiled.route_chain(0);
    assert_eq!(chain.needs_request_body(), body.is_some());
    let mut ctx = RequestCtx::detached(head, compiled.credentials());
    ctx.body = body.map(|b| bytes::Bytes::copy_from_slice(b.as_bytes()));
    assert!(block_on(chain.access(&mut ctx)).is_none());
    let body = ctx.body.map(|b| String::from_utf8(b.to_vec()).unwrap());
    (ctx.request, body)
}

fn header<'h>(head: &'h http::request::Parts, name: &str) -> Vec<&'h str> {
    head.headers
        .get_all(name)
        .iter()
        .map(|v| v.to_str().unwrap())
        .collect()
}

#[test]
fn headers_in_kong_order() {
    let cfg = r#"{
        remove: {headers: [x-gone, x-renamed-then-removed]},
        rename: {headers: ["x-old:x-new", "x-absent:x-never"]},
        replace: {headers: ["x-new:replaced", "x-missing:nope"]},
        add: {headers: ["x-added:1", "x-keep:not-used"]},
        append: {headers: ["x-keep:2", "x-list:a"]}}"#;
    let head = request(
        "GET",
        "/",
        &[
            ("x-gone", "1"),
            ("x-old", "o"),
            ("x-keep", "k"),
            ("host", "h.test"),
        ],
    );
    let (out, _) = run(cfg, head, None);
    assert!(out.headers.get("x-gone").is_none());
    assert!(out.headers.get("x-old").is_none());
    assert_eq!(header(&out, "x-new"), ["replaced"]);
    assert!(out.headers.get("x-never").is_none());
    assert!(
        out.headers.get("x-missing").is_none(),
        "replace only what is there"
    );
    assert_eq!(header(&out, "x-added"), ["1"]);
    assert_eq!(
        header(&out, "x-keep"),
        ["k", "2"],
        "add skips present; append adds"
    );
    assert_eq!(header(&out, "x-list"), ["a"]);
    assert_eq!(header(&out, "host"), ["h.test"]);
}

#[test]
fn querystring_and_uri() {
    let cfg = r#"{
        remove: {querystring: [drop]},
        rename: {querystring: ["old:new"]},
        replace: {querystring: ["r:R", "absent:x"], uri: "/v2/users/$(uri_captures.id)"},
        add: {querystring: ["a:1", "r:no"]},
        append: {querystring: ["l:2"]}}"#;
    let head = request("GET", "/users/42?drop=1&old=o&r=r&l=1", &[]);
    let (_, compiled) = compile(&config(cfg));
    let mut ctx = RequestCtx::detached(head, compiled.credentials());
    let captures = sluice_router::Captures {
        unnamed: vec![Some("/users/42".into()), Some("42".into())],
        named: vec![("id".into(), "42".into())],
    };
    ctx.captures = Some(&captures);
    assert!(block_on(compiled.route_chain(0).access(&mut ctx)).is_none());
    assert_eq!(ctx.request.uri.path(), "/v2/users/42");
    assert_eq!(ctx.request.uri.query(), Some("r=R&l=1&l=2&new=o&a=1"));
}

#[test]
fn json_body() {
    let cfg = r#"{
        remove: {body: [secret]},
        rename: {body: ["old:new"]},
        replace: {body: ["name:$(headers.x_name)", "missing:x"]},
        add: {body: ["added:yes", "name:no", "off:now-on"]},
        append: {body: ["tags:b", "fresh:1"]}}"#;
    let head = request(
        "POST",
        "/",
        &[
            ("content-type", "application/json"),
            ("content-length", "200"),
            ("x-name", "ann"),
        ],
    );
    let input = r#"{"secret":1,"old":2,"name":"x","tags":"a","off":false}"#;
    let (out, body) = run(cfg, head, Some(input));
    let body: Value = serde_json::from_str(&body.unwrap()).unwrap();
    assert_eq!(
        body,
        json!({"new": 2, "name": "ann", "tags": ["a", "b"], "off": "now-on", "added": "yes", "fresh": ["1"]})
    );
    let len = serde_json::to_string(&body).unwrap().len().to_string();
    assert_eq!(header(&out, "content-length"), [len.as_str()]);
}

#[test]
fn empty_or_invalid_json_bodies() {
    let cfg = r#"{remove: {body: [a]}, add: {body: ["b:1"]}}"#;
    let json = [("content-type", "application/json")];
    let (_, body) = run(cfg, request("POST", "/", &json), Some(""));
    assert_eq!(
        body.as_deref(),
        Some(r#"{"b":"1"}"#),
        "add works on an empty body"
    );
    let (_, body) = run(cfg, request("POST", "/", &json), Some("not json"));
    assert_eq!(
        body.as_deref(),
        Some("not json"),
        "invalid JSON is left alone"
    );
    let text = [("content-type", "text/plain")];
    let (_, body) = run(cfg, request("POST", "/", &text), Some("a=1"));
    assert_eq!(
        body.as_deref(),
        Some("a=1"),
        "other content types are left alone"
    );
}

#[test]
fn form_body() {
    let cfg = r#"{
        remove: {body: [a]}, rename: {body: ["b:c"]}, replace: {body: ["d:D"]},
        add: {body: ["e:hello world"]}, append: {body: ["d:more"]}}"#;
    let head = request(
        "POST",
        "/",
        &[("content-type", "application/x-www-form-urlencoded")],
    );
    let (_, body) = run(cfg, head, Some("a=1&b=2&d=4"));
    assert_eq!(body.as_deref(), Some("d=D&d=more&c=2&e=hello%20world"));
}

#[test]
fn http_method_moves_form_body_to_query() {
    let head = request(
        "POST",
        "/?x=1",
        &[("content-type", "application/x-www-form-urlencoded")],
    );
    let (out, body) = run("{http_method: GET}", head, Some("x=2&y=3"));
    assert_eq!(out.method, http::Method::GET);
    assert_eq!(out.uri.query(), Some("x=1&x=2&y=3"));
    assert_eq!(body.as_deref(), Some("x=2&y=3"));
    let (_, compiled) = compile(&config("{http_method: PUT}"));
    assert!(!compiled.route_chain(0).needs_request_body());
}

#[test]
fn schema_rejects_bad_entries() {
    let registry = crate::Registry::builtin();
    for bad in [
        "{add: {headers: [no-colon]}}",
        "{rename: {headers: [\"x-a:bad header\"]}}",
        "{http_method: get}",
        "{append: {body: [\":v\"]}}",
    ] {
        let err = sluice_model::declarative::parse(&config(bad), &registry);
        assert!(err.is_err(), "{bad} should be rejected");
    }
}
