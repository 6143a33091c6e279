//! The grpc-web plugin through the real binary: an HTTP/1.1 client (reqwest) speaks grpc-web, binary and
//! text, to routes whose service is the testkit's tonic upstream over h2c. The test is the independent
//! grpc-web side: it frames and base64-encodes the requests and takes the responses apart by hand (data
//! frames, then the trailer frame with its status), with Kong's exact trailer bytes. Covered: unary calls
//! in both modes, server streaming, the upstream's error status and the gateway's, `pass_stripped_path`,
//! Kong's CORS preflight and headers, JSON transcoded with a `.proto` (refused without one), and an h2 client that gets the status in
//! the body rather than as HTTP trailers. tonic-web's grpc-web client is a second, independent client.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use sluice_testkit::{closed_port, Code, EchoUpstream, Gateway, GrpcRequest, GrpcUpstream, Msg};

const BIN: &str = env!("CARGO_BIN_EXE_sluice");
const BINARY: &str = "application/grpc-web+proto";
const TEXT: &str = "application/grpc-web-text";

/// `/` and `/kept` keep the client's path upstream (as Kong's `grpc_pass` does), `/prefix` passes the
/// stripped one, `/json` too and transcodes JSON with `proto`, `/down` goes to a closed port, `/http` to
/// an HTTP/1.1 echo service (as in Kong's own tests).
fn config(up: u16, proto: &str, echo: u16) -> String {
    format!(
        r#"_format_version: "3.0"
services:
- name: echo
  url: grpc://127.0.0.1:{up}
  routes:
  - {{name: web, paths: [/], plugins: [{{name: grpc-web}}]}}
  - {{name: kept, paths: [/kept], plugins: [{{name: grpc-web}}]}}
  - name: stripped
    paths: [/prefix]
    plugins:
    - name: grpc-web
      config: {{pass_stripped_path: true, allow_origin_header: "https://app.test"}}
  - name: json
    paths: [/json]
    plugins: [{{name: grpc-web, config: {{pass_stripped_path: true, proto: {proto:?}}}}}]
- name: down
  url: grpc://127.0.0.1:{closed}
  retries: 0
  routes: [{{name: down, paths: [/down], plugins: [{{name: grpc-web}}]}}]
- name: http
  url: http://127.0.0.1:{echo}
  routes: [{{name: http, paths: [/http], plugins: [{{name: grpc-web}}]}}]
"#,
        closed = closed_port()
    )
}

/// The testkit's service as a `.proto`, for JSON transcoding.
const ECHO_PROTO: &str = r#"syntax = "proto3";
package sluice.test;
message Msg { string text = 1; bytes payload = 2; }
service Echo {
  rpc Unary(Msg) returns (Msg);
  rpc ServerStream(Msg) returns (stream Msg);
}
"#;

struct Setup {
    _proto: tempfile::TempDir,
    _up: GrpcUpstream,
    _echo: EchoUpstream,
    gw: Gateway,
    http: reqwest::Client,
}

fn setup() -> Setup {
    let proto = tempfile::tempdir().unwrap();
    let file = proto.path().join("echo.proto");
    std::fs::write(&file, ECHO_PROTO).unwrap();
    let (up, echo) = (GrpcUpstream::start(), EchoUpstream::start());
    let yaml = config(up.port(), file.to_str().unwrap(), echo.port());
    let gw = Gateway::builder(BIN).config_yaml(&yaml).start();
    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    Setup {
        _proto: proto,
        _up: up,
        _echo: echo,
        gw,
        http,
    }
}

/// What a grpc-web call came back with.
struct Reply {
    status: u16,
    headers: reqwest::header::HeaderMap,
    /// The body, base64-decoded in text mode.
    body: Vec<u8>,
}

impl Setup {
    /// POSTs one message as a grpc-web call over HTTP/1.1 (`mime` picks the mode).
    async fn call(&self, path: &str, mime: &str, text: &str, payload: usize) -> Reply {
        let url = format!("http://127.0.0.1:{}{path}", self.gw.proxy_port());
        let framed = frame(0, &message(text, payload));
        let text_mode = mime.starts_with(TEXT);
        let body = match text_mode {
            true => STANDARD.encode(&framed).into_bytes(),
            false => framed,
        };
        let resp = self
            .http
            .post(url)
            .header("content-type", mime)
            .header("x-grpc-web", "1")
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.version(), reqwest::Version::HTTP_11);
        let (status, headers) = (resp.status().as_u16(), resp.headers().clone());
        let raw = resp.bytes().await.unwrap().to_vec();
        let body = if text_mode { unbase64(&raw) } else { raw };
        Reply {
            status,
            headers,
            body,
        }
    }
}

/// A grpc-web frame: flag, big-endian length, bytes.
fn frame(flag: u8, bytes: &[u8]) -> Vec<u8> {
    let mut out = vec![flag];
    out.extend_from_slice(&(bytes.len() as u32).to_be_bytes());
    out.extend_from_slice(bytes);
    out
}

/// The testkit's `Msg { text = 1, payload = 2 }` in protobuf, written by hand.
fn message(text: &str, payload: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for (tag, bytes) in [(0x0a, text.as_bytes().to_vec()), (0x12, vec![7; payload])] {
        if bytes.is_empty() {
            continue;
        }
        out.push(tag);
        let mut n = bytes.len();
        while n >= 0x80 {
            out.push((n as u8 & 0x7f) | 0x80);
            n >>= 7;
        }
        out.push(n as u8);
        out.extend_from_slice(&bytes);
    }
    out
}

/// `Msg`'s text and payload length (fields shorter than 128 bytes, as these tests send).
fn parse_message(mut bytes: &[u8]) -> (String, usize) {
    let (mut text, mut payload) = (String::new(), 0);
    while let [tag, len, rest @ ..] = bytes {
        let (field, rest) = rest.split_at(*len as usize);
        match *tag {
            0x0a => text = String::from_utf8(field.to_vec()).unwrap(),
            0x12 => payload = field.len(),
            _ => panic!("unexpected field {tag:#x}"),
        }
        bytes = rest;
    }
    (text, payload)
}

/// Text mode's body: base64 pieces, each padded on its own.
fn unbase64(raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut rest = raw;
    while !rest.is_empty() {
        let end = match rest.iter().position(|&b| b == b'=') {
            Some(i) => i + rest[i..].iter().take_while(|&&b| b == b'=').count(),
            None => rest.len(),
        };
        out.extend(STANDARD.decode(&rest[..end]).expect("base64"));
        rest = &rest[end..];
    }
    out
}

/// The body's data frames as messages, and the trailer frame's text, which must come last.
fn frames(mut body: &[u8]) -> (Vec<(String, usize)>, String) {
    let mut messages = Vec::new();
    loop {
        assert!(body.len() >= 5, "a frame's head: {body:?}");
        let len = u32::from_be_bytes(body[1..5].try_into().unwrap()) as usize;
        let (bytes, rest) = body[5..].split_at(len);
        if body[0] == 0x80 {
            assert!(rest.is_empty(), "bytes after the trailer frame");
            return (messages, String::from_utf8(bytes.to_vec()).unwrap());
        }
        assert_eq!(body[0], 0, "an uncompressed data frame");
        messages.push(parse_message(bytes));
        body = rest;
    }
}

const OK: &str = "grpc-status:0\r\ngrpc-message:\r\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unary_calls_in_binary_and_text_mode() {
    let s = setup();
    for mime in [
        BINARY,
        "application/grpc-web",
        TEXT,
        "application/grpc-web-text+proto",
    ] {
        let r = s.call("/sluice.test.Echo/Unary", mime, "hello", 3).await;
        assert_eq!(r.status, 200, "{mime}");
        assert_eq!(r.headers["content-type"], mime);
        assert_eq!(r.headers["access-control-allow-origin"], "*");
        let (messages, trailer) = frames(&r.body);
        assert_eq!(messages, [("hello".to_string(), 3)], "{mime}");
        assert_eq!(trailer, OK, "{mime}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_streaming_ends_with_the_trailer_frame() {
    let s = setup();
    for mime in [BINARY, TEXT] {
        let r = s
            .call("/sluice.test.Echo/ServerStream", mime, "4", 20)
            .await;
        let (messages, trailer) = frames(&r.body);
        let texts: Vec<_> = messages.iter().map(|(t, n)| (t.as_str(), *n)).collect();
        assert_eq!(
            texts,
            [("0", 20), ("1", 20), ("2", 20), ("3", 20)],
            "{mime}"
        );
        assert_eq!(trailer, OK, "{mime}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn error_statuses_are_in_the_trailer_frame() {
    let s = setup();
    // The upstream's own error, a trailers-only answer.
    for mime in [BINARY, TEXT] {
        let r = s.call("/sluice.test.Echo/Unary", mime, "fail", 0).await;
        assert_eq!(r.status, 200);
        let (messages, trailer) = frames(&r.body);
        assert!(messages.is_empty());
        assert_eq!(trailer, "grpc-status:5\r\ngrpc-message:nope\r\n", "{mime}");
    }
    // Without pass_stripped_path the upstream gets the client's path, as from Kong: no such method.
    let r = s.call("/kept/sluice.test.Echo/Unary", BINARY, "x", 0).await;
    let unimplemented = "grpc-status:12\r\ngrpc-message:/kept/sluice.test.Echo/Unary\r\n";
    assert_eq!(frames(&r.body).1, unimplemented);
    // The gateway's own error (the upstream is down): Kong's gRPC status for a 502.
    let r = s.call("/down/sluice.test.Echo/Unary", TEXT, "x", 0).await;
    assert_eq!(r.status, 502);
    assert_eq!(r.headers["content-type"], TEXT);
    let bad = "An invalid response was received from the upstream server";
    assert_eq!(r.headers["grpc-status"], "13");
    let (messages, trailer) = frames(&r.body);
    assert!(messages.is_empty());
    assert_eq!(trailer, format!("grpc-status:13\r\ngrpc-message:{bad}\r\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pass_stripped_path_and_allow_origin_header() {
    let s = setup();
    let r = s
        .call("/prefix/sluice.test.Echo/Unary", TEXT, "stripped", 0)
        .await;
    assert_eq!(r.headers["access-control-allow-origin"], "https://app.test");
    let (messages, trailer) = frames(&r.body);
    assert_eq!(messages, [("stripped".to_string(), 0)]);
    assert_eq!(trailer, OK);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn preflights_are_answered_by_the_gateway() {
    let s = setup();
    let port = s.gw.proxy_port();
    for (path, origin) in [("/", "*"), ("/prefix/x.Y/Z", "https://app.test")] {
        let resp = s
            .http
            .request(
                reqwest::Method::OPTIONS,
                format!("http://127.0.0.1:{port}{path}"),
            )
            .header("origin", "https://app.test")
            .header("access-control-request-method", "POST")
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
        let h = resp.headers().clone();
        assert_eq!(h["access-control-allow-origin"], origin);
        assert_eq!(h["access-control-allow-methods"], "POST");
        assert_eq!(
            h["access-control-allow-headers"],
            "content-type,x-grpc-web,x-user-agent"
        );
        assert_eq!(h["content-type"], "application/grpc-web-text+proto");
        assert_eq!(resp.text().await.unwrap(), "OK");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_is_transcoded_with_the_proto() {
    let s = setup();
    let port = s.gw.proxy_port();
    let post = |path: &str, mime: &str, body: Vec<u8>| {
        let url = format!("http://127.0.0.1:{port}/json/sluice.test.Echo/{path}");
        s.http
            .post(url)
            .header("content-type", mime)
            .body(body)
            .send()
    };
    // Bare JSON each way: the payload's bytes in base64, as proto3's JSON has them.
    let resp = post(
        "Unary",
        "application/json",
        br#"{"text":"hi","payload":"BwcH"}"#.to_vec(),
    );
    let resp = resp.await.unwrap();
    assert_eq!(resp.headers()["content-type"], "application/json");
    let body = resp.text().await.unwrap();
    assert_eq!(body, r#"{"text":"hi","payload":"BwcH"}"#);
    // Framed JSON in text mode: each message a data frame, then the trailer frame.
    let request = STANDARD.encode(frame(0, br#"{"text":"2"}"#));
    let resp = post(
        "ServerStream",
        "application/grpc-web-text+json",
        request.into_bytes(),
    );
    let raw = resp.await.unwrap().bytes().await.unwrap();
    let body = unbase64(&raw);
    let (a, rest) = body.split_at(5 + 12);
    let (b, trailer) = rest.split_at(5 + 12);
    assert_eq!(
        (&a[5..], &b[5..]),
        (&br#"{"text":"0"}"#[..], &br#"{"text":"1"}"#[..])
    );
    assert_eq!(trailer, frame(0x80, OK.as_bytes()));
    // A method the proto does not have: Kong's 400.
    let resp = post("Nope", "application/json", b"{}".to_vec())
        .await
        .unwrap();
    assert_eq!(resp.status(), 400);
    let unknown = r#"Unknown path "/sluice.test.Echo/Nope""#;
    assert_eq!(resp.text().await.unwrap(), unknown);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_requests_are_refused_without_a_proto() {
    let s = setup();
    let url = format!(
        "http://127.0.0.1:{}/sluice.test.Echo/Unary",
        s.gw.proxy_port()
    );
    let resp = s
        .http
        .post(url)
        .header("content-type", "application/json")
        .body(r#"{"text":"x"}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 400);
    let message = "transcoding requests require a .proto file defining the service";
    assert_eq!(resp.text().await.unwrap(), message);
}

/// Over h2 the status is in the body too, and not also sent as HTTP trailers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_h2_client_gets_the_status_in_the_body_only() {
    let s = setup();
    let tcp = tokio::net::TcpStream::connect(("127.0.0.1", s.gw.proxy_port()))
        .await
        .unwrap();
    let (client, conn) = h2::client::handshake(tcp).await.unwrap();
    tokio::spawn(conn);
    let mut client = client.ready().await.unwrap();
    let uri = format!(
        "http://127.0.0.1:{}/sluice.test.Echo/Unary",
        s.gw.proxy_port()
    );
    let req = http::Request::post(uri)
        .header("content-type", BINARY)
        .body(())
        .unwrap();
    let (resp, mut send) = client.send_request(req, false).unwrap();
    send.send_data(frame(0, &message("over h2", 0)).into(), true)
        .unwrap();
    let resp = resp.await.unwrap();
    assert_eq!(resp.headers()["content-type"], BINARY);
    let mut body = resp.into_body();
    let mut bytes = Vec::new();
    while let Some(chunk) = body.data().await {
        let chunk = chunk.unwrap();
        body.flow_control().release_capacity(chunk.len()).unwrap();
        bytes.extend_from_slice(&chunk);
    }
    assert!(body.trailers().await.unwrap().is_none(), "no HTTP trailers");
    let (messages, trailer) = frames(&bytes);
    assert_eq!(messages, [("over h2".to_string(), 0)]);
    assert_eq!(trailer, OK);
}

/// tonic-web's client (binary mode over HTTP/1.1, hyper's client underneath) reads the messages and the
/// statuses the gateway puts in the body.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tonic_webs_client_calls_through_the_gateway() {
    type Codec = tonic_prost::ProstCodec<Msg, Msg>;
    let s = setup();
    let http = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build_http();
    let web = tonic_web::GrpcWebClientService::new(http);
    let origin = format!("http://127.0.0.1:{}", s.gw.proxy_port());
    let mut grpc = tonic::client::Grpc::with_origin(web, origin.parse().unwrap());
    let path = |method: &str| format!("/sluice.test.Echo/{method}").parse().unwrap();

    grpc.ready().await.unwrap();
    let req = GrpcRequest::new(Msg::text("from tonic-web"));
    let resp = grpc.unary(req, path("Unary"), Codec::default()).await;
    assert_eq!(resp.unwrap().into_inner().text, "from tonic-web");

    grpc.ready().await.unwrap();
    let req = GrpcRequest::new(Msg::text("fail"));
    let err = grpc.unary(req, path("Unary"), Codec::default()).await;
    let err = err.unwrap_err();
    assert_eq!((err.code(), err.message()), (Code::NotFound, "nope"));

    grpc.ready().await.unwrap();
    let req = GrpcRequest::new(Msg::text("3"));
    let resp = grpc.server_streaming(req, path("ServerStream"), Codec::default());
    let mut stream = resp.await.unwrap().into_inner();
    let mut texts = Vec::new();
    while let Some(m) = stream.message().await.unwrap() {
        texts.push(m.text);
    }
    assert_eq!(texts, ["0", "1", "2"]);
}

/// On a route whose service speaks HTTP/1.1 the request is translated too (Kong's own tests use such a
/// service): `TE: trailers` whatever the client sent, `application/grpc`, the body decoded; the answer
/// ends with the trailer frame.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_service_gets_the_translated_request() {
    let s = setup();
    let url = format!("http://127.0.0.1:{}/http/x.Y/Z", s.gw.proxy_port());
    let framed = frame(0, &message("hi", 0));
    let resp = s
        .http
        .post(url)
        .header("content-type", TEXT)
        .header("te", "chunked")
        .body(STANDARD.encode(&framed))
        .send()
        .await
        .unwrap();
    let body = unbase64(&resp.bytes().await.unwrap());
    let trailer = frame(0x80, OK.as_bytes());
    let echoed = body
        .strip_suffix(&trailer[..])
        .expect("ends with the trailer frame");
    let echoed: serde_json::Value = serde_json::from_slice(echoed).unwrap();
    assert_eq!(echoed["headers"]["te"], "trailers");
    assert_eq!(echoed["headers"]["content-type"], "application/grpc");
    assert_eq!(echoed["body_len"], framed.len());
    assert_eq!(echoed["path"], "/x.Y/Z");
}
