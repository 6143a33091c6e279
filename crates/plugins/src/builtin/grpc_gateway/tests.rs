//! Path templates, bindings, request messages and responses against a `.proto` shaped like Kong's test
//! service, then the plugin's phases on a compiled chain.

use super::payload::{self, ENCODE_FAILED};
use super::response::{http_status, Downstream};
use super::rules::Endpoints;
use super::template::Template;
use crate::builtin::grpc_proto::{compile as compile_proto, frame};
use crate::registry::Registry;
use crate::testing::{block_on, compile, request};
use crate::RequestCtx;
use bytes::Bytes;
use http::{HeaderValue, Method};
use prost::Message;
use prost_reflect::{DynamicMessage, MessageDescriptor, SerializeOptions};
use serde_json::{json, Value};

/// Imports the built-in `google/api/annotations.proto`; `Listen`'s `custom` rule binds nothing.
const SHOP_PROTO: &str = r#"syntax = "proto3";
package shop;
import "google/api/annotations.proto";
import "google/protobuf/timestamp.proto";
import "other.proto";
import public "shared.proto";
service Books {
  rpc GetBook(GetBookRequest) returns (Book) {
    option (google.api.http) = {
      get: "/v1/shelves/{shelf}/books/{book.id}"
      additional_bindings { get: "/v1/legacy/{book.id=**}" }
    };
  }
  rpc CreateBook(Book) returns (Book) {
    option (google.api.http) = { post: "/v1/books" body: "*" };
  }
  rpc UpdateBook(UpdateBookRequest) returns (Book) {
    option (google.api.http) = { patch: "/v1/books/{id}" body: "book" };
  }
  rpc Listen(GetBookRequest) returns (Book) {
    option (google.api.http) = { custom: { kind: "HEAD" path: "/v1/listen" } };
  }
}
message Ref { string id = 1; int32 edition = 2; }
message GetBookRequest { string shelf = 1; Ref book = 2; bool full = 3; repeated string tags = 4; }
message Book {
  string id = 1; string title = 2; int64 pages = 3; bool used = 4; repeated string tags = 5;
  google.protobuf.Timestamp published = 6; Ref ref = 7;
}
message UpdateBookRequest { string id = 1; Book book = 2; }
"#;

/// A file `SHOP_PROTO` imports (Kong binds none of its methods) and one it imports `public` (bound).
fn imported(package: &str, path: &str) -> String {
    let rule = format!("option (google.api.http) = {{ get: \"{path}\" }};");
    format!(
        "syntax = \"proto3\"; package {package}; import \"google/api/annotations.proto\";\n\
         message M {{ string id = 1; }} service S {{ rpc Get(M) returns (M) {{ {rule} }} }}\n"
    )
}

/// The shop `.proto` and its imports in a temporary folder, and the shop's path.
fn shop_file() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let other = imported("other", "/v1/other/{id}");
    std::fs::write(dir.path().join("other.proto"), other).unwrap();
    let shared = imported("shared", "/v1/shared/{id}");
    std::fs::write(dir.path().join("shared.proto"), shared).unwrap();
    let file = dir.path().join("shop.proto");
    std::fs::write(&file, SHOP_PROTO).unwrap();
    (dir, file.to_str().unwrap().to_string())
}

fn endpoints() -> Endpoints {
    let (_dir, file) = shop_file();
    Endpoints::of(&compile_proto(&file).unwrap(), "shop.proto").unwrap()
}

/// Protobuf bytes of `message` as JSON with every field, to compare what was built.
fn decoded(message: &MessageDescriptor, bytes: &[u8]) -> Value {
    let message = DynamicMessage::decode(message.clone(), bytes).unwrap();
    let options = SerializeOptions::new().use_proto_field_name(true);
    message
        .serialize_with_options(serde_json::value::Serializer, &options)
        .unwrap()
}

#[test]
fn templates_match_as_kongs_regexes() {
    let vars = |template: &str, path: &str| Template::compile(template).unwrap().matches(path);
    let pair = |a: &str, b: &str| (a.to_string(), b.to_string());
    let nested = vars("/v1/s/{shelf}/b/{book.id}", "/v1/s/a/b/x-1");
    assert_eq!(
        nested,
        Some(vec![pair("shelf", "a"), pair("book.id", "x-1")])
    );
    assert_eq!(vars("/v1/s/{shelf}/b/{id}", "/v1/s/a/c/b/x"), None);
    assert_eq!(vars("/v1/{name=*}", "/v1/a"), Some(vec![pair("name", "a")]));
    let deep = vars("/v1/{name=shelves/*/books/**}", "/v1/shelves/1/books/2/3");
    assert_eq!(deep, Some(vec![pair("name", "shelves/1/books/2/3")]));
    assert_eq!(vars("/v1/{name=shelves/*}", "/v1/shelves/1/2"), None);
    assert_eq!(vars("/v1/a.b:cancel", "/v1/a.b:cancel"), Some(vec![]));
    assert_eq!(vars("/v1/a.b", "/v1/aXb"), None);
    // Not a variable by Kong's pattern: literal text.
    assert_eq!(vars("/v1/{a b}", "/v1/{a b}"), Some(vec![]));
    assert_eq!(vars("/v1/messages/", "/v1/messages"), None);
}

#[test]
fn bindings_are_found_by_method_then_path_in_file_order() {
    let endpoints = endpoints();
    let (get, vars) = endpoints.find(&Method::GET, "/v1/legacy/a/b").unwrap();
    assert_eq!(get.rewrite, "/shop.Books/GetBook");
    assert_eq!(vars, vec![("book.id".to_string(), "a/b".to_string())]);
    let (patch, _) = endpoints.find(&Method::PATCH, "/v1/books/7").unwrap();
    assert_eq!(patch.body.as_deref(), Some("book"));
    let miss = endpoints.find(&Method::GET, "/v1/books/7").unwrap_err();
    assert_eq!(miss, r#"Unknown path "/v1/books/7""#);
    let head = endpoints.find(&Method::HEAD, "/v1/listen").unwrap_err();
    assert_eq!(head, r#"Unknown method "head""#);
    let put = endpoints.find(&Method::PUT, "/v1/books/7").unwrap_err();
    assert_eq!(put, r#"Unknown method "put""#);
    let (shared, _) = endpoints.find(&Method::GET, "/v1/shared/1").unwrap();
    assert_eq!(shared.rewrite, "/shared.S/Get");
    assert!(endpoints.find(&Method::GET, "/v1/other/1").is_err());
}

/// The message built for a request, as JSON.
fn built(method: Method, path: &str, query: Option<&str>, body: &str) -> Result<Value, String> {
    let endpoints = endpoints();
    let (endpoint, vars) = endpoints.find(&method, path).unwrap();
    let bytes = payload::build(endpoint, vars, query, body.as_bytes())?;
    Ok(decoded(&endpoint.input, &bytes))
}

#[test]
fn path_variables_and_query_arguments_fill_fields() {
    let query = "book.edition=3&full=0&tags=a&tags=b&nope=1&book.nope=2&shelf=q";
    let message = built(Method::GET, "/v1/shelves/s/books/b", Some(query), "").unwrap();
    let expected = json!({"shelf": "q", "book": {"id": "b", "edition": 3}, "tags": ["a", "b"]});
    assert_eq!(message, expected);
    for (value, full) in [("true", true), ("1", true), ("false", false), ("0", false)] {
        let query = format!("full={value}");
        let message = built(Method::GET, "/v1/legacy/x", Some(&query), "").unwrap();
        assert_eq!(
            message.get("full"),
            full.then_some(&Value::Bool(true)),
            "{value}"
        );
    }
    let bare = built(Method::GET, "/v1/legacy/x", Some("full"), "").unwrap();
    assert_eq!(bare["full"], true);
    let not_a_number = built(Method::GET, "/v1/legacy/x", Some("book.edition=x"), "");
    assert_eq!(not_a_number.unwrap_err(), ENCODE_FAILED);
}

#[test]
fn bodies_fill_every_field_or_the_named_one() {
    let body = r#"{"title":"T","pages":"12","tags":[],"published":"2024-05-01T10:00:00"}"#;
    let message = built(Method::POST, "/v1/books", Some("title=ignored"), body).unwrap();
    let published = json!("2024-05-01T10:00:00Z");
    let expected = json!({"title": "T", "pages": "12", "published": published});
    assert_eq!(message, expected);
    let named = built(Method::PATCH, "/v1/books/7", None, r#"{"title":"N"}"#).unwrap();
    assert_eq!(named, json!({"id": "7", "book": {"title": "N"}}));
    let empty = built(Method::PATCH, "/v1/books/7", None, "").unwrap();
    assert_eq!(empty, json!({"id": "7"}));
}

#[test]
fn bodies_kong_refuses() {
    let refused = |body: &str| built(Method::POST, "/v1/books", None, body).unwrap_err();
    assert!(refused(r#"{"title":"#).starts_with("decode json err: "));
    assert_eq!(refused(r#""text""#), "body must be a table");
    assert_eq!(refused(r#"{"title":null}"#), ENCODE_FAILED);
    assert_eq!(refused(r#"{"title":1}"#), ENCODE_FAILED);
    assert_eq!(refused(r#"{"ref":{"edition":null}}"#), ENCODE_FAILED);
}

#[test]
fn grpc_statuses_map_to_kongs_http_statuses() {
    let status =
        |code: &str| http_status(&HeaderValue::from_str(code).unwrap()).map(|s| s.as_u16());
    let table = [
        ("0", 200),
        ("1", 499),
        ("3", 400),
        ("4", 504),
        ("5", 404),
        ("7", 403),
    ];
    let more = [
        ("8", 429),
        ("12", 500),
        ("14", 503),
        ("16", 401),
        ("99", 500),
    ];
    for (code, http) in table.into_iter().chain(more) {
        assert_eq!(status(code), Some(http), "{code}");
    }
    assert_eq!(status("x"), None);
}

#[test]
fn responses_are_kongs_json_whatever_the_pieces() {
    let endpoints = endpoints();
    let (endpoint, _) = endpoints.find(&Method::POST, "/v1/books").unwrap();
    let book = json!({"title": "T", "published": "2024-05-01T10:00:00.5Z", "pages": 9});
    let message = DynamicMessage::deserialize(endpoint.output.clone(), book).unwrap();
    let framed = frame(0, &message.encode_to_vec());
    let two = [framed.clone(), framed.clone()].concat();
    let mut down = Downstream::new(endpoint.output.clone());
    let mut out = Vec::new();
    for (piece, eof) in [(&two[..3], false), (&two[3..20], false), (&two[20..], true)] {
        out.extend_from_slice(&down.chunk(piece, eof));
    }
    let one = json!({"id": "", "title": "T", "pages": 9, "used": false, "tags": [],
        "published": "2024-05-01T10:00:00"});
    let expected = [one.to_string(), one.to_string()].concat();
    assert_eq!(String::from_utf8(out).unwrap(), expected);
    // Nothing whole at the end: the bytes left go out as they came.
    let mut down = Downstream::new(endpoint.output.clone());
    assert_eq!(down.chunk(&framed[..4], true), &framed[..4]);
}

fn config(proto: Option<&str>) -> String {
    let config = proto.map_or(String::new(), |p| format!(", config: {{proto: {p:?}}}"));
    format!(
        "_format_version: '3.0'\nservices:\n- name: s\n  url: grpc://127.0.0.1:9\n  routes:\n  \
         - {{name: r, paths: [/], plugins: [{{name: grpc-gateway{config}}}]}}\n"
    )
}

#[test]
fn a_call_is_translated_both_ways() {
    let (_dir, file) = shop_file();
    let (_, compiled) = compile(&config(Some(&file)));
    let chain = compiled.route_chain(0);
    let head = request(
        "GET",
        "/v1/shelves/s/x/../books//%62?full=1",
        &[("te", "gzip")],
    );
    let mut ctx = RequestCtx::detached(head, compiled.credentials());
    assert!(block_on(chain.access(&mut ctx)).is_none());
    assert_eq!(ctx.request.method, Method::POST);
    assert_eq!(ctx.request.uri, "/shop.Books/GetBook");
    let headers = &ctx.request.headers;
    assert_eq!(headers["content-type"], "application/grpc");
    assert_eq!(headers["te"], "trailers");
    assert_eq!(
        ctx.response_headers
            .get("access-control-allow-origin")
            .unwrap(),
        "*"
    );
    let body = ctx.body.clone().unwrap();
    assert_eq!(headers["content-length"], body.len().to_string().as_str());
    let get = endpoints()
        .find(&Method::GET, "/v1/legacy/x")
        .unwrap()
        .0
        .input
        .clone();
    let expected = json!({"shelf": "s", "book": {"id": "b"}, "full": true});
    assert_eq!(decoded(&get, &body[5..]), expected);
    // A trailers-only NOT_FOUND: 404, JSON, the leftover (empty) body.
    let mut resp = http::Response::new(()).into_parts().0;
    resp.headers
        .insert("grpc-status", HeaderValue::from_static("5"));
    chain.header_filter(&mut ctx, &mut resp);
    assert_eq!(resp.status, 404);
    assert_eq!(resp.headers["content-type"], "application/json");
    let mut chunk = Bytes::new();
    chain.body_filter(&mut ctx, &mut chunk, true);
    assert!(chunk.is_empty());
}

#[test]
fn preflights_unbound_paths_and_missing_protos_are_answered() {
    let (_dir, file) = shop_file();
    let answer = |proto: Option<&str>, method: &str, path: &str| {
        let (_, compiled) = compile(&config(proto));
        let head = request(method, path, &[]);
        let mut ctx = RequestCtx::detached(head, compiled.credentials());
        block_on(compiled.route_chain(0).access(&mut ctx)).expect("answered")
    };
    let preflight = answer(Some(&file), "OPTIONS", "/v1/books");
    assert_eq!(
        (preflight.status.as_u16(), &preflight.body[..]),
        (200, &b"OK"[..])
    );
    let allowed = &preflight.headers["access-control-allow-methods"];
    assert_eq!(allowed, "GET,POST,PATCH,DELETE");
    let unbound = answer(Some(&file), "GET", "/v1/books/7/x");
    let expected = r#"failed to transcode .proto file Unknown path "/v1/books/7/x""#;
    assert_eq!(
        (unbound.status.as_u16(), &unbound.body[..]),
        (400, expected.as_bytes())
    );
    let no_proto = answer(None, "GET", "/v1/books");
    let expected = "transcoding requests require a .proto file defining the service";
    assert_eq!(no_proto.body, expected);
}

#[test]
fn a_proto_that_is_missing_or_does_not_compile_fails_the_config() {
    let dir = tempfile::tempdir().unwrap();
    let broken = dir.path().join("broken.proto");
    std::fs::write(&broken, "syntax = \"proto3\"; message {").unwrap();
    let missing = dir.path().join("missing.proto");
    for file in [broken, missing] {
        let yaml = config(Some(file.to_str().unwrap()));
        let errors = sluice_model::declarative::parse(&yaml, &Registry::builtin()).unwrap_err();
        let text = errors.to_string();
        assert!(text.contains("proto: proto '"), "{text}");
    }
}
