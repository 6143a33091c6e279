//! response-transformer on a compiled chain: headers, JSON bodies over several chunks, json_types.

use crate::testing::{compile, request};
use crate::RequestCtx;
use bytes::Bytes;
use serde_json::{json, Value};

fn compiled(plugin_config: &str) -> crate::CompiledPlugins {
    compile(&format!(
        r#"
_format_version: "3.0"
services:
- name: s
  url: http://127.0.0.1:1
  routes:
  - name: r
    paths: [/]
    plugins:
    - name: response-transformer
      config: {plugin_config}
"#
    ))
    .1
}

/// Runs header_filter and body_filter (the body in `chunks`) on a response with these headers.
fn run(
    plugin_config: &str,
    headers: &[(&str, &str)],
    chunks: &[&str],
) -> (http::response::Parts, String) {
    let compiled = compiled(plugin_config);
    let chain = compiled.route_chain(0);
    let mut ctx = RequestCtx::detached(request("GET", "/", &[]), compiled.credentials());
    let mut builder = http::Response::builder();
    for (k, v) in headers {
        builder = builder.header(*k, *v);
    }
    let mut head = builder.body(()).unwrap().into_parts().0;
    chain.header_filter(&mut ctx, &mut head);
    let mut out = String::new();
    for (i, c) in chunks.iter().enumerate() {
        let mut chunk = Bytes::copy_from_slice(c.as_bytes());
        chain.body_filter(&mut ctx, &mut chunk, i + 1 == chunks.len());
        out.push_str(std::str::from_utf8(&chunk).unwrap());
    }
    (head, out)
}

#[test]
fn headers_in_kong_order() {
    let cfg = r#"{
        remove: {headers: [x-gone]},
        rename: {headers: ["x-old:x-new"]},
        replace: {headers: ["x-new:replaced", "x-missing:no"]},
        add: {headers: ["x-added:1", "x-keep:no"]},
        append: {headers: ["x-keep:2"]}}"#;
    let (head, body) = run(
        cfg,
        &[
            ("x-gone", "1"),
            ("x-old", "o"),
            ("x-keep", "k"),
            ("content-length", "3"),
        ],
        &["abc"],
    );
    let h = &head.headers;
    assert!(h.get("x-gone").is_none() && h.get("x-old").is_none() && h.get("x-missing").is_none());
    assert_eq!(h["x-new"], "replaced");
    assert_eq!(h["x-added"], "1");
    let keep: Vec<_> = h.get_all("x-keep").iter().collect();
    assert_eq!(keep, ["k", "2"]);
    assert_eq!(h["content-length"], "3", "no JSON transform: length kept");
    assert_eq!(body, "abc");
}

#[test]
fn json_body_over_chunks() {
    let cfg = r#"{
        remove: {json: [secret]},
        rename: {json: ["old:new"]},
        replace: {json: ["n:7", "absent:1", "off:on"], json_types: [number, number, string]},
        add: {json: ["flag:true", "n:0", "off:x"], json_types: [boolean, number, string]},
        append: {json: ["list:b", "s:t", "fresh:1.5"], json_types: [string, string, number]}}"#;
    let input = r#"{"secret":1,"old":"o","n":1,"list":["a"],"s":"s","off":false}"#;
    let (split_a, split_b) = input.split_at(17);
    let (head, body) = run(
        cfg,
        &[
            ("content-type", "application/json; charset=utf-8"),
            ("content-length", "99"),
        ],
        &[split_a, split_b, ""],
    );
    assert!(head.headers.get("content-length").is_none());
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        body,
        json!({"new": "o", "n": 7, "list": ["a", "b"], "s": ["s", "t"], "off": "x", "flag": true, "fresh": [1.5]})
    );
}

#[test]
fn only_json_responses_are_rewritten() {
    let cfg = r#"{add: {json: ["a:1"]}}"#;
    let (head, body) = run(
        cfg,
        &[("content-type", "text/plain"), ("content-length", "2")],
        &["{}"],
    );
    assert_eq!(body, "{}");
    assert_eq!(head.headers["content-length"], "2");
    let (_, body) = run(cfg, &[("content-type", "application/json")], &["[1]"]);
    assert_eq!(body, "[1]", "not an object: sent unchanged");
    let (_, body) = run(cfg, &[("content-type", "application/json")], &["{}"]);
    assert_eq!(body, r#"{"a":"1"}"#);
}
