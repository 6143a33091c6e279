//! The wire format against Kong's own test vectors, and the plugin's phases on a compiled chain.

use super::codec::{Mode, Refused};
use super::{CarriedTrailers, UpstreamPath};
use crate::testing::{block_on, compile, request};
use crate::RequestCtx;
use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use bytes::Bytes;
use http::{HeaderMap, HeaderValue};

/// Kong's spec: `hello.HelloService/SayHello` with `greeting: "heya"`, and its answer `hello heya` with
/// status 0, in text mode.
const REQUEST_TEXT: &str = "AAAAAAYKBGhleWE=";
const RESPONSE_TEXT: &str = "AAAAAAwKCmhlbGxvIGhleWE=";
const TRAILER_TEXT: &str = "gAAAAB5ncnBjLXN0YXR1czowDQpncnBjLW1lc3NhZ2U6DQo=";

fn mode(content_type: &str) -> Result<Mode, Refused> {
    let value = HeaderValue::from_str(content_type).unwrap();
    Mode::of(Some(&value), None, "/hello.HelloService/SayHello")
}

#[test]
fn content_types_pick_the_mode_as_kongs_table() {
    assert!(!mode("application/grpc-web").unwrap().text);
    assert!(!mode("application/grpc-web+proto").unwrap().text);
    assert!(mode("application/grpc-web-text").unwrap().text);
    assert!(mode("application/grpc-web-text+proto").unwrap().text);
    assert_eq!(
        mode("application/grpc-web+json").err(),
        Some(Refused::NeedsProto)
    );
    assert_eq!(mode("application/json").err(), Some(Refused::NeedsProto));
    assert_eq!(Mode::of(None, None, "/").err(), Some(Refused::NeedsProto));
}

#[test]
fn text_mode_matches_kongs_bytes() {
    let mut text = mode("application/grpc-web-text").unwrap();
    let up = text.upstream(Bytes::from_static(REQUEST_TEXT.as_bytes()));
    assert_eq!(up.unwrap(), STANDARD.decode(REQUEST_TEXT).unwrap());
    let message = Bytes::from(STANDARD.decode(RESPONSE_TEXT).unwrap());
    assert_eq!(text.downstream(message), RESPONSE_TEXT);
    assert_eq!(text.trailer_frame(&HeaderMap::new()), TRAILER_TEXT);
    let binary = mode("application/grpc-web+proto").unwrap();
    let frame = binary.trailer_frame(&HeaderMap::new());
    assert_eq!(frame, STANDARD.decode(TRAILER_TEXT).unwrap());
}

#[test]
fn text_bodies_may_be_padded_pieces() {
    let text = mode("application/grpc-web-text").unwrap();
    let two = format!("{}\r\n{}", STANDARD.encode(b"ab"), STANDARD.encode(b"cde"));
    let decoded = text.upstream(Bytes::from(two)).unwrap();
    assert_eq!(decoded, &b"abcde"[..]);
    let bad = text.upstream(Bytes::from_static(b"AAA*"));
    assert_eq!(bad.err(), Some(Refused::BadBase64));
}

#[test]
fn trailers_carry_status_message_then_metadata() {
    let mut t = HeaderMap::new();
    t.insert("x-extra", HeaderValue::from_static("1"));
    t.insert("grpc-message", HeaderValue::from_static("nope"));
    t.insert("grpc-status", HeaderValue::from_static("5"));
    let frame = super::codec::trailer_frame(&t);
    let block = b"grpc-status:5\r\ngrpc-message:nope\r\nx-extra:1\r\n";
    assert_eq!(frame[0], 0x80);
    assert_eq!(&frame[1..5], (block.len() as u32).to_be_bytes());
    assert_eq!(&frame[5..], block);
}

const CONFIG: &str = r#"
_format_version: "3.0"
services:
- name: s
  url: grpc://127.0.0.1:1
  routes:
  - name: r
    paths: [/prefix]
    plugins:
    - name: grpc-web
      config: {pass_stripped_path: true, allow_origin_header: "https://app.test"}
"#;

#[test]
fn preflight_is_answered_with_kongs_headers() {
    let (_, compiled) = compile(CONFIG);
    let head = request("OPTIONS", "/prefix/x", &[]);
    let mut ctx = RequestCtx::detached(head, compiled.credentials());
    let resp = block_on(compiled.route_chain(0).access(&mut ctx)).expect("answered");
    assert_eq!(resp.status, 200);
    assert_eq!(resp.body, "OK");
    let h = &resp.headers;
    assert_eq!(h["content-type"], "application/grpc-web-text+proto");
    assert_eq!(h["access-control-allow-origin"], "https://app.test");
    assert_eq!(h["access-control-allow-methods"], "POST");
    let allowed = "content-type,x-grpc-web,x-user-agent";
    assert_eq!(h["access-control-allow-headers"], allowed);
}

#[test]
fn a_text_call_is_translated_both_ways() {
    let (_, compiled) = compile(CONFIG);
    let chain = compiled.route_chain(0);
    let ct = ("content-type", "application/grpc-web-text");
    let head = request("POST", "/prefix/pkg.S/M?a=1", &[ct, ("te", "chunked")]);
    let mut ctx = RequestCtx::detached(head, compiled.credentials());
    ctx.body = Some(Bytes::from_static(REQUEST_TEXT.as_bytes()));
    ctx.plugin_data.insert(UpstreamPath("/pkg.S/M".into()));
    assert!(block_on(chain.access(&mut ctx)).is_none());
    let h = &ctx.request.headers;
    assert_eq!(h["content-type"], "application/grpc");
    assert_eq!(h["te"], "trailers");
    assert_eq!(h["content-length"], "11");
    assert_eq!(ctx.request.uri, "/pkg.S/M?a=1");
    assert_eq!(
        ctx.response_headers
            .get("access-control-allow-origin")
            .unwrap(),
        "https://app.test"
    );
    assert_eq!(
        ctx.body.as_deref(),
        Some(&STANDARD.decode(REQUEST_TEXT).unwrap()[..])
    );

    let mut resp = http::Response::new(()).into_parts().0;
    resp.headers
        .insert("content-type", HeaderValue::from_static("application/grpc"));
    chain.header_filter(&mut ctx, &mut resp);
    assert_eq!(resp.headers["content-type"], "application/grpc-web-text");
    let mut chunk = Bytes::from(STANDARD.decode(RESPONSE_TEXT).unwrap());
    chain.body_filter(&mut ctx, &mut chunk, false);
    assert_eq!(chunk, RESPONSE_TEXT);
    // The relay hands the upstream's trailers over before the last call.
    let mut trailers = HeaderMap::new();
    trailers.insert("grpc-status", HeaderValue::from_static("0"));
    ctx.plugin_data
        .get::<CarriedTrailers>()
        .unwrap()
        .carry(trailers);
    let mut last = Bytes::new();
    chain.body_filter(&mut ctx, &mut last, true);
    assert_eq!(last, TRAILER_TEXT);
}

#[test]
fn a_trailers_only_error_ends_the_body_with_its_status() {
    let (_, compiled) = compile(CONFIG);
    let chain = compiled.route_chain(0);
    let head = request(
        "POST",
        "/prefix/pkg.S/M",
        &[("content-type", "application/grpc-web")],
    );
    let mut ctx = RequestCtx::detached(head, compiled.credentials());
    ctx.body = Some(Bytes::from_static(b"\0\0\0\0\0"));
    assert!(block_on(chain.access(&mut ctx)).is_none());
    assert_eq!(
        ctx.request.uri, "/prefix/pkg.S/M",
        "no path lent: unchanged"
    );
    let mut resp = http::Response::new(()).into_parts().0;
    resp.headers
        .insert("grpc-status", HeaderValue::from_static("5"));
    resp.headers
        .insert("grpc-message", HeaderValue::from_static("nope"));
    chain.header_filter(&mut ctx, &mut resp);
    let mut last = Bytes::new();
    chain.body_filter(&mut ctx, &mut last, true);
    assert_eq!(&last[5..], b"grpc-status:5\r\ngrpc-message:nope\r\n");
}

#[test]
fn json_and_bad_base64_are_refused() {
    let (_, compiled) = compile(CONFIG);
    let chain = compiled.route_chain(0);
    for (ct, body, message) in [
        ("application/json", "{}", Refused::NeedsProto),
        ("application/grpc-web-text", "A*==", Refused::BadBase64),
    ] {
        let head = request("POST", "/prefix/pkg.S/M", &[("content-type", ct)]);
        let mut ctx = RequestCtx::detached(head, compiled.credentials());
        ctx.body = Some(Bytes::from(body));
        let resp = block_on(chain.access(&mut ctx)).expect("refused");
        assert_eq!(
            (resp.status.as_u16(), &resp.body[..]),
            (400, message.message().as_bytes())
        );
    }
}

/// Kong's `hello.proto`.
const HELLO_PROTO: &str = r#"syntax = "proto3";
package hello;
service HelloService { rpc SayHello(HelloRequest) returns (HelloResponse); }
message HelloRequest { string greeting = 1; }
message HelloResponse { string reply = 1; }
"#;

/// A `proto` file in a temporary folder, and a config whose route uses it.
fn proto_config() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("hello.proto");
    std::fs::write(&file, HELLO_PROTO).unwrap();
    let config = CONFIG.replace(
        "config: {pass_stripped_path: true,",
        &format!("config: {{proto: {:?},", file.to_str().unwrap()),
    );
    (dir, config)
}

/// A JSON call through the chain: what the upstream gets, and what the client gets for Kong's answer.
fn json_call(content_type: &str, body: Vec<u8>) -> (Bytes, Bytes) {
    let (_dir, config) = proto_config();
    let (_, compiled) = compile(&config);
    let chain = compiled.route_chain(0);
    let path = "/hello.HelloService/SayHello";
    let head = request("POST", path, &[("content-type", content_type)]);
    let mut ctx = RequestCtx::detached(head, compiled.credentials());
    ctx.body = Some(Bytes::from(body));
    assert!(block_on(chain.access(&mut ctx)).is_none());
    let upstream = ctx.body.clone().unwrap();
    let mut resp = http::Response::new(()).into_parts().0;
    chain.header_filter(&mut ctx, &mut resp);
    assert_eq!(resp.headers["content-type"], content_type);
    // The answer comes in two pieces, split inside the message.
    let answer = STANDARD.decode(RESPONSE_TEXT).unwrap();
    let mut out = Vec::new();
    for (piece, eof) in [
        (&answer[..7], false),
        (&answer[7..], false),
        (&[][..], true),
    ] {
        let mut chunk = Bytes::copy_from_slice(piece);
        chain.body_filter(&mut ctx, &mut chunk, eof);
        out.extend_from_slice(&chunk);
    }
    (upstream, Bytes::from(out))
}

fn framed(flag: u8, bytes: &[u8]) -> Vec<u8> {
    let mut out = vec![flag];
    out.extend_from_slice(&(bytes.len() as u32).to_be_bytes());
    out.extend_from_slice(bytes);
    out
}

#[test]
fn json_is_transcoded_with_the_proto_as_kongs_spec() {
    let request = STANDARD.decode(REQUEST_TEXT).unwrap();
    let greeting = br#"{"greeting":"heya"}"#;
    let reply = br#"{"reply":"hello heya"}"#;
    let trailer = STANDARD.decode(TRAILER_TEXT).unwrap();
    let (up, down) = json_call("application/grpc-web+json", framed(0, greeting));
    assert_eq!(up, request);
    assert_eq!(down, [framed(0, reply), trailer].concat());
    // Bare JSON each way, no trailer frame.
    let (up, down) = json_call("application/json", greeting.to_vec());
    assert_eq!(
        (up, down),
        (Bytes::from(request), Bytes::from_static(reply))
    );
}

#[test]
fn a_proto_that_does_not_compile_fails_json_requests_only() {
    let config = CONFIG.replace("pass_stripped_path: true", "proto: /nonexistent/x.proto");
    let (_, compiled) = compile(&config);
    let chain = compiled.route_chain(0);
    for (content_type, status) in [("application/json", 500), ("application/grpc-web", 0)] {
        let head = request(
            "POST",
            "/hello.HelloService/SayHello",
            &[("content-type", content_type)],
        );
        let mut ctx = RequestCtx::detached(head, compiled.credentials());
        ctx.body = Some(Bytes::from_static(b"\0\0\0\0\0"));
        let answer = block_on(chain.access(&mut ctx)).map(|r| r.status.as_u16());
        assert_eq!(answer.unwrap_or(0), status, "{content_type}");
    }
}

#[test]
fn json_to_an_unknown_method_or_invalid_json_is_refused() {
    let (_dir, config) = proto_config();
    let (_, compiled) = compile(&config);
    let chain = compiled.route_chain(0);
    for (path, body, message) in [
        (
            "/hello.HelloService/Nope",
            "{}",
            r#"Unknown path "/hello.HelloService/Nope""#,
        ),
        ("/hello.HelloService/SayHello", "{", "invalid JSON request"),
    ] {
        let head = request("POST", path, &[("content-type", "application/json")]);
        let mut ctx = RequestCtx::detached(head, compiled.credentials());
        ctx.body = Some(Bytes::from(body));
        let resp = block_on(chain.access(&mut ctx)).expect("refused");
        assert_eq!(resp.status, 400);
        let text = String::from_utf8(resp.body.to_vec()).unwrap();
        assert!(text.starts_with(message), "{text}");
    }
}
