//! The grpc-gateway plugin through the real binary: a REST client (reqwest, HTTP/1.1, JSON) calls the
//! testkit's tonic `sluice.test.Echo` service over h2c through the `google.api.http` bindings of a
//! `.proto` that imports the built-in `google/api/annotations.proto`. Covered: GET with a path variable,
//! POST with `body: "*"`, query arguments into fields, server streaming, the upstream's error status
//! mapped to Kong's HTTP status, Kong's 400s (no binding, no such method), its CORS preflight, the
//! schema served by the Admin API, and a `.proto` that does not compile refused by `config check` and
//! by `POST /config` while the old config keeps serving.

use serde_json::{json, Value};
use sluice_testkit::{Gateway, GrpcUpstream};
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_sluice");

/// The testkit's service with HTTP bindings (its messages as the testkit's hand-written `Msg`).
const ECHO_PROTO: &str = r#"syntax = "proto3";
package sluice.test;
import "google/api/annotations.proto";
message Msg { string text = 1; bytes payload = 2; }
service Echo {
  rpc Unary(Msg) returns (Msg) {
    option (google.api.http) = {
      get: "/v1/echo/{text}"
      additional_bindings { post: "/v1/echo" body: "*" }
      additional_bindings { get: "/v1/query" }
    };
  }
  rpc ServerStream(Msg) returns (stream Msg) {
    option (google.api.http) = { get: "/v1/stream/{text}" };
  }
}
"#;

fn config(up: u16, proto: &str) -> String {
    format!(
        r#"_format_version: "3.0"
services:
- name: echo
  url: grpc://127.0.0.1:{up}
  routes:
  - {{name: rest, paths: [/], plugins: [{{name: grpc-gateway, config: {{proto: {proto:?}}}}}]}}
"#
    )
}

struct Setup {
    dir: tempfile::TempDir,
    up: GrpcUpstream,
    gw: Gateway,
    http: reqwest::Client,
}

fn setup() -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("echo.proto");
    std::fs::write(&file, ECHO_PROTO).unwrap();
    let up = GrpcUpstream::start();
    let gw = Gateway::builder(BIN)
        .config_yaml(&config(up.port(), file.to_str().unwrap()))
        .start();
    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    Setup { dir, up, gw, http }
}

/// What a call came back with.
struct Reply {
    status: u16,
    headers: reqwest::header::HeaderMap,
    body: String,
}

impl Setup {
    async fn call(&self, method: &str, path: &str, body: Option<Value>) -> Reply {
        let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let mut req = self.http.request(method, self.gw.proxy_url(path));
        if let Some(body) = body {
            req = req.json(&body);
        }
        let resp = req.send().await.unwrap();
        let (status, headers) = (resp.status().as_u16(), resp.headers().clone());
        let body = resp.text().await.unwrap();
        Reply {
            status,
            headers,
            body,
        }
    }

    /// A call that must succeed, its body as JSON.
    async fn json(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let r = self.call(method, path, body).await;
        assert_eq!(r.status, 200, "{path}: {}", r.body);
        assert_eq!(r.headers["content-type"], "application/json");
        assert_eq!(r.headers["access-control-allow-origin"], "*");
        serde_json::from_str(&r.body).unwrap_or_else(|e| panic!("{path}: {e}: {}", r.body))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn path_variables_bodies_and_query_arguments_make_the_call() {
    let s = setup();
    // Every field is written, defaults included, as Kong's lua-protobuf decodes them.
    let got = s.json("GET", "/v1/echo/hello", None).await;
    assert_eq!(got, json!({"text": "hello", "payload": ""}));
    let body = json!({"text": "posted", "payload": "AQID", "unknown": 1});
    let got = s.json("POST", "/v1/echo", Some(body)).await;
    assert_eq!(got, json!({"text": "posted", "payload": "AQID"}));
    let got = s
        .json(
            "GET",
            "/v1/query?text=from%20query&payload=AQI%3D&x=1",
            None,
        )
        .await;
    assert_eq!(got, json!({"text": "from query", "payload": "AQI="}));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_is_one_json_object_per_message() {
    let s = setup();
    let r = s.call("GET", "/v1/stream/3", None).await;
    assert_eq!(r.status, 200);
    let one = |n: u8| json!({"text": n.to_string(), "payload": ""}).to_string();
    assert_eq!(r.body, [one(0), one(1), one(2)].concat());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_upstreams_error_becomes_kongs_http_status() {
    let s = setup();
    // The testkit answers `fail` with NOT_FOUND "nope", trailers only: Kong's 404, an empty body.
    let r = s.call("GET", "/v1/echo/fail", None).await;
    assert_eq!(r.status, 404, "{}", r.body);
    assert_eq!(r.headers["grpc-status"], "5");
    assert_eq!(r.headers["grpc-message"], "nope");
    assert_eq!(r.headers["content-type"], "application/json");
    assert_eq!(r.body, "");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unbound_requests_get_kongs_400_and_preflights_its_cors() {
    let s = setup();
    let r = s.call("GET", "/v1/nope", None).await;
    assert_eq!(r.status, 400);
    let unknown = r#"failed to transcode .proto file Unknown path "/v1/nope""#;
    assert_eq!(r.body, unknown);
    assert_eq!(r.headers["access-control-allow-origin"], "*");
    let r = s.call("PUT", "/v1/echo", Some(json!({}))).await;
    assert_eq!(r.status, 400);
    assert_eq!(
        r.body,
        r#"failed to transcode .proto file Unknown method "put""#
    );
    let r = s.call("POST", "/v1/echo", Some(json!({"text": 1}))).await;
    assert_eq!(
        (r.status, r.body.as_str()),
        (400, "failed to encode payload")
    );
    let r = s.call("OPTIONS", "/v1/echo", None).await;
    assert_eq!((r.status, r.body.as_str()), (200, "OK"));
    assert_eq!(
        r.headers["access-control-allow-methods"],
        "GET,POST,PATCH,DELETE"
    );
    assert_eq!(r.headers["access-control-allow-headers"], "content-type");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proto_that_does_not_compile_is_a_config_error() {
    let s = setup();
    let schema = s.http.get(s.gw.admin_url("/schemas/plugins/grpc-gateway"));
    let schema: Value = schema.send().await.unwrap().json().await.unwrap();
    let fields = schema["fields"].as_array().unwrap();
    let record = fields.iter().find_map(|f| f.get("config")).unwrap();
    assert_eq!(
        record["fields"],
        json!([{"proto": {"type": "string"}}]),
        "{schema}"
    );
    let broken = s.dir.path().join("broken.proto");
    std::fs::write(&broken, "syntax = \"proto3\";\nmessage {").unwrap();
    let yaml = config(s.up.port(), broken.to_str().unwrap());
    let file = s.dir.path().join("kong.yml");
    std::fs::write(&file, &yaml).unwrap();
    let out = Command::new(BIN)
        .args(["config", "check"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("broken.proto"), "{stderr}");
    let post = s.http.post(s.gw.admin_url("/config"));
    let r = post
        .header("content-type", "application/x-yaml")
        .body(yaml)
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    let body = r.text().await.unwrap();
    assert_eq!(status, 400, "{body}");
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(body["code"], 14);
    let error = &body["fields"]["services"][0]["routes"][0]["plugins"][0]["config.proto"];
    let error = error.as_str().unwrap_or_default();
    assert!(
        error.contains("broken.proto': expected an identifier"),
        "{body}"
    );
    // The old config keeps serving.
    let got = s.json("GET", "/v1/echo/still", None).await;
    assert_eq!(got["text"], "still");
}
