//! request-transformer, response-transformer and plugin `protocols` through the real binary and the echo
//! upstream: headers, query strings, JSON and form bodies, method, `replace.uri` with templates, JSON response
//! bodies with `json_types`.

use serde_json::{json, Value};
use sluice_testkit::{client, EchoUpstream, Gateway};

const BIN: &str = env!("CARGO_BIN_EXE_sluice");

fn config(port: u16) -> String {
    format!(
        r#"_format_version: "3.0"
services:
- name: s
  url: http://127.0.0.1:{port}
  routes:
  - name: req
    paths: [/req]
    plugins:
    - name: request-transformer
      config:
        remove: {{headers: [x-remove], querystring: [drop]}}
        rename: {{headers: ["x-old:x-new"], querystring: ["old:new"]}}
        replace: {{headers: ["x-rep:replaced", "x-not-sent:nope"], querystring: ["r:R"]}}
        add: {{headers: ["x-add:added", "x-keep:ignored", "x-from:$(headers.x_source)"], querystring: ["a:1", "r:no"]}}
        append: {{headers: ["x-keep:more"], querystring: ["l:2"]}}
  - name: uri
    paths: ["~/users/(?<id>\\d+)$"]
    strip_path: false
    plugins:
    - name: request-transformer
      config:
        http_method: PUT
        replace: {{uri: "/v2/accounts/$(uri_captures.id)"}}
  - name: body
    paths: [/body]
    plugins:
    - name: request-transformer
      config:
        remove: {{body: [password]}}
        rename: {{body: ["user:username"]}}
        replace: {{body: ["role:guest", "absent:x"]}}
        add: {{body: ["source:gateway", "role:ignored"]}}
        append: {{body: ["tags:gw"]}}
  - name: to-get
    paths: [/to-get]
    plugins:
    - name: request-transformer
      config: {{http_method: GET}}
  - name: resp
    paths: [/resp]
    plugins:
    - name: response-transformer
      config:
        remove: {{headers: [x-drop], json: [upstream, headers]}}
        rename: {{headers: ["x-up:x-down"], json: ["body_len:length"]}}
        replace: {{headers: ["x-rep:replaced", "x-none:no"], json: ["method:REPLACED", "absent:1"]}}
        add: {{headers: ["x-added:yes", "x-rep:ignored"], json: ["count:3", "ok:true", "method:ignored"], json_types: [number, boolean, string]}}
        append: {{headers: ["x-multi:b"], json: ["path:/extra", "list:1"], json_types: [string, number]}}
  - name: resp-headers-only
    paths: [/resp-plain]
    plugins:
    - name: response-transformer
      config: {{add: {{headers: ["x-added:yes"]}}}}
  - name: protocols
    paths: [/protocols]
    plugins:
    - name: request-transformer
      protocols: [https]
      config: {{add: {{headers: ["x-https-only:1"]}}}}
    - name: response-transformer
      protocols: [http]
      config: {{add: {{headers: ["x-http-only:1"]}}}}
    - name: correlation-id
      protocols: [grpc, grpcs]
      config: {{header_name: x-grpc-id, echo_downstream: true}}
"#
    )
}

struct Resp {
    status: u16,
    headers: reqwest::header::HeaderMap,
    body: Value,
    raw_len: usize,
}

impl Resp {
    fn header(&self, name: &str) -> Vec<&str> {
        self.headers
            .get_all(name)
            .iter()
            .map(|v| v.to_str().unwrap())
            .collect()
    }
}

async fn send(method: &str, url: String, headers: &[(&str, &str)], body: Option<&str>) -> Resp {
    let mut req = client().request(method.parse().unwrap(), &url);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    if let Some(b) = body {
        req = req.body(b.to_string());
    }
    let resp = req.send().await.unwrap_or_else(|e| panic!("{url}: {e}"));
    let (status, headers) = (resp.status().as_u16(), resp.headers().clone());
    let bytes = resp.bytes().await.unwrap();
    Resp {
        status,
        headers,
        body: serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        raw_len: bytes.len(),
    }
}

/// The echo upstream's view of a header: a string, a list for repeated headers, or null.
fn echoed<'v>(r: &'v Resp, name: &str) -> &'v Value {
    &r.body["headers"][name]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_headers_and_query() {
    let up = EchoUpstream::start();
    let gw = Gateway::builder(BIN)
        .config_yaml(&config(up.port()))
        .start();
    let headers = [
        ("x-remove", "1"),
        ("x-old", "o"),
        ("x-rep", "r"),
        ("x-keep", "k"),
        ("x-source", "src"),
    ];
    let r = send(
        "GET",
        gw.proxy_url("/req?drop=1&old=o&r=r&l=1&z=z"),
        &headers,
        None,
    )
    .await;
    assert_eq!(r.status, 200);
    assert!(echoed(&r, "x-remove").is_null());
    assert!(echoed(&r, "x-old").is_null());
    assert_eq!(echoed(&r, "x-new"), "o");
    assert_eq!(echoed(&r, "x-rep"), "replaced");
    assert!(
        echoed(&r, "x-not-sent").is_null(),
        "replace only what is present"
    );
    assert_eq!(echoed(&r, "x-add"), "added");
    assert_eq!(echoed(&r, "x-keep"), &json!(["k", "more"]));
    assert_eq!(
        echoed(&r, "x-from"),
        "src",
        "templates read request headers"
    );
    assert_eq!(r.body["query"], "r=R&l=1&l=2&z=z&new=o&a=1");

    // Nothing to rename/replace: only add/append apply.
    let r = send("GET", gw.proxy_url("/req"), &[], None).await;
    assert_eq!(r.body["query"], "a=1&r=no&l=2");
    assert_eq!(echoed(&r, "x-from"), "", "a missing header renders empty");
    assert_eq!(echoed(&r, "x-keep"), &json!(["ignored", "more"]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_uri_method_and_bodies() {
    let up = EchoUpstream::start();
    let gw = Gateway::builder(BIN)
        .config_yaml(&config(up.port()))
        .start();
    let r = send("POST", gw.proxy_url("/users/42?x=1"), &[], Some("raw")).await;
    assert_eq!(r.body["method"], "PUT");
    assert_eq!(r.body["path"], "/v2/accounts/42");
    assert_eq!(r.body["query"], "x=1");
    assert_eq!(
        r.body["body"], "raw",
        "no body transform: the body streams as is"
    );

    let input = r#"{"user":"ann","password":"p","role":"admin","tags":"a","n":1}"#;
    let json_ct = [("content-type", "application/json")];
    let r = send("POST", gw.proxy_url("/body"), &json_ct, Some(input)).await;
    let sent: Value = serde_json::from_str(r.body["body"].as_str().unwrap()).unwrap();
    assert_eq!(
        sent,
        json!({"username": "ann", "role": "guest", "tags": ["a", "gw"], "n": 1, "source": "gateway"})
    );
    let len = r.body["body_len"].as_u64().unwrap().to_string();
    assert_eq!(echoed(&r, "content-length"), len.as_str());

    let form_ct = [("content-type", "application/x-www-form-urlencoded")];
    let form = "user=ann&password=p&role=admin&note=a+b";
    let r = send("POST", gw.proxy_url("/body"), &form_ct, Some(form)).await;
    assert_eq!(
        r.body["body"],
        "role=guest&note=a%20b&username=ann&source=gateway&tags=gw"
    );
    let len = r.body["body_len"].as_u64().unwrap().to_string();
    assert_eq!(echoed(&r, "content-length"), len.as_str());

    let r = send(
        "POST",
        gw.proxy_url("/body"),
        &[("content-type", "text/plain")],
        Some("a=1"),
    )
    .await;
    assert_eq!(r.body["body"], "a=1", "other bodies pass unchanged");

    // http_method GET moves a form body into the query string, as Kong does.
    let r = send(
        "POST",
        gw.proxy_url("/to-get?q=0"),
        &form_ct,
        Some("a=1&q=2"),
    )
    .await;
    assert_eq!(r.body["method"], "GET");
    assert_eq!(r.body["query"], "q=0&q=2&a=1");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn response_headers_and_json_body() {
    let up = EchoUpstream::start();
    let gw = Gateway::builder(BIN)
        .config_yaml(&config(up.port()))
        .start();
    let set = [
        ("x-echo-set-header", "x-drop: 1"),
        ("x-echo-set-header", "x-up: u"),
        ("x-echo-set-header", "x-rep: r"),
        ("x-echo-set-header", "x-multi: a"),
    ];
    let r = send("GET", gw.proxy_url("/resp?k=v"), &set, None).await;
    assert_eq!(r.status, 200);
    assert!(r.header("x-drop").is_empty());
    assert!(r.header("x-up").is_empty());
    assert_eq!(r.header("x-down"), ["u"]);
    assert_eq!(r.header("x-rep"), ["replaced"]);
    assert!(r.header("x-none").is_empty());
    assert_eq!(r.header("x-added"), ["yes"]);
    assert_eq!(r.header("x-multi"), ["a", "b"]);
    let b = &r.body;
    assert!(b.get("upstream").is_none() && b.get("headers").is_none());
    assert!(b.get("body_len").is_none() && b["length"] == 0);
    assert_eq!(b["method"], "REPLACED");
    assert!(b.get("absent").is_none());
    assert_eq!((&b["count"], &b["ok"]), (&json!(3), &json!(true)));
    assert_eq!(b["path"], json!(["/", "/extra"]), "strip_path left '/'");
    assert_eq!(b["list"], json!([1]));
    assert_eq!(b["query"], "k=v");
    if let Some(len) = r.header("content-length").first() {
        assert_eq!(*len, r.raw_len.to_string(), "a stale length never goes out");
    }

    // A non-JSON body is left alone even with JSON transforms configured.
    let r = send(
        "GET",
        gw.proxy_url("/resp"),
        &[("x-echo-body-size", "5")],
        None,
    )
    .await;
    assert_eq!(r.raw_len, 5);
    // Header-only config: the upstream's Content-Length stays.
    let r = send("GET", gw.proxy_url("/resp-plain"), &[], None).await;
    assert_eq!(r.header("x-added"), ["yes"]);
    assert_eq!(r.header("content-length"), [r.raw_len.to_string().as_str()]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plugins_run_only_for_their_protocols() {
    let up = EchoUpstream::start();
    let gw = Gateway::builder(BIN)
        .config_yaml(&config(up.port()))
        .start();
    let r = send("GET", gw.proxy_url("/protocols"), &[], None).await;
    assert!(
        echoed(&r, "x-https-only").is_null(),
        "https-only plugin skipped on http"
    );
    assert_eq!(r.header("x-http-only"), ["1"]);
    assert!(r.header("x-grpc-id").is_empty(), "grpc-only plugin skipped");

    let grpc = [("content-type", "application/grpc")];
    let r = send("POST", gw.proxy_url("/protocols"), &grpc, Some("")).await;
    assert_eq!(r.header("x-grpc-id").len(), 1, "runs for a grpc request");
    assert!(
        r.header("x-http-only").is_empty(),
        "http-only plugin skipped on grpc"
    );
}
