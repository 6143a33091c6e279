//! gRPC proxying through the real binary, with a tonic client (and Python's `grpcio`,
//! `tests/support/grpc_client.py`, as an independent one) against the testkit's tonic upstream over h2c:
//! unary, server-, client- and bidirectional streaming, a message over 1 MB, the upstream's own status
//! in trailers, `grpc-timeout` passing through (deadline exceeded), the gateway's errors as gRPC statuses
//! (no route, key-auth, upstream down, no peer), Kong's checks of requests on gRPC routes (426, 415),
//! and an upstream restarted in the middle of a stream. An upstream that never answers: `grpc_stalled.rs`.

use sluice_testkit::{
    closed_port, self_signed, Code, Gateway, GrpcClient, GrpcRequest, GrpcUpstream, Msg,
};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_sluice");
const WAIT: Duration = Duration::from_secs(10);

/// Routes by host (`:authority`): `echo` and `keyed` (key-auth) on the gRPC upstream, `down` on a
/// closed port, `nopeer` on an upstream whose only target has weight 0, and `secure` (grpcs only) on the
/// gRPC upstream over TLS.
fn config(up: u16, secure: u16) -> String {
    format!(
        r#"_format_version: "3.0"
services:
- name: echo
  url: grpc://127.0.0.1:{up}
  routes:
  - {{name: echo, protocols: [grpc], hosts: [echo.grpc.test]}}
  - name: keyed
    protocols: [grpc]
    hosts: [keyed.grpc.test]
    plugins: [{{name: key-auth}}]
- name: secure
  url: grpcs://127.0.0.1:{secure}
  routes: [{{name: secure, protocols: [grpcs], hosts: [secure.grpc.test]}}]
- name: down
  url: grpc://127.0.0.1:{closed}
  retries: 1
  routes: [{{name: down, protocols: [grpc], hosts: [down.grpc.test]}}]
- name: nopeer
  protocol: grpc
  host: nopeer
  routes: [{{name: nopeer, protocols: [grpc], hosts: [nopeer.grpc.test]}}]
upstreams:
- name: nopeer
  targets: [{{target: "127.0.0.1:{up}", weight: 0}}]
consumers:
- username: alice
  keyauth_credentials: [{{key: alice-key}}]
"#,
        closed = closed_port()
    )
}

struct Setup {
    up: GrpcUpstream,
    _secure: GrpcUpstream,
    gw: Gateway,
}

fn setup() -> Setup {
    let up = GrpcUpstream::start();
    let secure = GrpcUpstream::tls(&self_signed(&["localhost"]));
    let yaml = config(up.port(), secure.port());
    let gw = Gateway::builder(BIN).config_yaml(&yaml).start();
    Setup {
        up,
        _secure: secure,
        gw,
    }
}

impl Setup {
    fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.gw.proxy_port()))
    }

    async fn client(&self, host: &str) -> GrpcClient {
        GrpcClient::connect_as(self.addr(), host).await.unwrap()
    }

    /// A reqwest client that sends `host`'s requests to the gateway (h2c with prior knowledge when `h2`).
    fn http(&self, host: &str, h2: bool) -> (reqwest::Client, String) {
        let b = reqwest::Client::builder()
            .no_proxy()
            .resolve(host, self.addr());
        let b = if h2 { b.http2_prior_knowledge() } else { b };
        let url = format!(
            "http://{host}:{}/sluice.test.Echo/Unary",
            self.gw.proxy_port()
        );
        (b.build().unwrap(), url)
    }
}

fn msg(text: &str, payload: usize) -> Msg {
    Msg {
        text: text.into(),
        payload: vec![7; payload],
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unary_calls_pass_with_the_upstreams_status() {
    let s = setup();
    let mut c = s.client("echo.grpc.test").await;
    let resp = c.unary(GrpcRequest::new(Msg::text("hello"))).await.unwrap();
    let via = resp
        .metadata()
        .get("via")
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();
    assert_eq!(resp.into_inner().text, "hello");
    assert!(via.starts_with("2 sluice/"), "Kong's gRPC Via: {via}");
    // The upstream's own status, in its trailers-only answer.
    let err = c
        .unary(GrpcRequest::new(Msg::text("fail")))
        .await
        .unwrap_err();
    assert_eq!((err.code(), err.message()), (Code::NotFound, "nope"));
    // Many calls at once, from as many client connections.
    let calls = (0..20).map(|i| {
        let c = GrpcClient::connect_as(s.addr(), "echo.grpc.test");
        async move {
            let mut c = c.await.unwrap();
            let text = format!("call {i}");
            c.unary(GrpcRequest::new(Msg::text(&text)))
                .await
                .unwrap()
                .into_inner()
                .text
                == text
        }
    });
    let all = futures_util::future::join_all(calls).await;
    assert!(all.into_iter().all(|ok| ok));
    // 22 calls from 21 client connections, at most one upstream connection per gateway worker.
    assert!(
        s.up.connections() <= 2,
        "{} upstream connections",
        s.up.connections()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpcs_both_sides_and_kongs_plain_text_refusal() {
    let s = setup();
    // TLS from the client (ALPN h2 on the ssl listener) and to the upstream (which serves only h2 by ALPN).
    let tls = SocketAddr::from(([127, 0, 0, 1], s.gw.proxy_tls_port()));
    let mut c = GrpcClient::connect_tls(tls, "secure.grpc.test")
        .await
        .unwrap();
    let resp = c
        .unary(GrpcRequest::new(Msg::text("sealed")))
        .await
        .unwrap();
    assert_eq!(resp.into_inner().text, "sealed");
    let mut stream = c
        .server_stream(GrpcRequest::new(msg("3", 1)))
        .await
        .unwrap()
        .into_inner();
    let mut n = 0;
    while stream.message().await.unwrap().is_some() {
        n += 1;
    }
    assert_eq!(n, 3);
    // The grpcs-only route over h2c: Kong's 200 with grpc-status 1.
    let mut c = s.client("secure.grpc.test").await;
    let err = c.unary(GrpcRequest::new(Msg::text("x"))).await.unwrap_err();
    assert_eq!(
        (err.code(), err.message()),
        (Code::Cancelled, "gRPC request matched gRPCs route")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_over_a_megabyte_passes_both_ways() {
    let s = setup();
    let mut c = s.client("echo.grpc.test").await;
    let big = msg("big", 3 << 20);
    let resp = c.unary(GrpcRequest::new(big.clone())).await.unwrap();
    assert_eq!(resp.into_inner(), big);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_client_and_bidi_streaming() {
    let s = setup();
    let mut c = s.client("echo.grpc.test").await;
    // Server streaming: five messages, each with the request's payload.
    let mut stream = c
        .server_stream(GrpcRequest::new(msg("5", 10)))
        .await
        .unwrap()
        .into_inner();
    let mut texts = Vec::new();
    while let Some(m) = stream.message().await.unwrap() {
        assert_eq!(m.payload.len(), 10);
        texts.push(m.text);
    }
    assert_eq!(texts, ["0", "1", "2", "3", "4"]);
    // Client streaming: 100 messages of 1000 bytes, counted by the upstream.
    let msgs = futures_util::stream::iter((0..100).map(|_| msg("", 1000)));
    let resp = c.client_stream(msgs).await.unwrap();
    assert_eq!(resp.into_inner().text, "count:100 bytes:100000");
    // Bidi, one message at a time: each echo comes back before the next message is sent, so neither
    // direction is buffered to its end.
    let (tx, rx) = tokio::sync::mpsc::channel::<Msg>(1);
    let outgoing =
        futures_util::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|m| (m, rx)) });
    tx.send(Msg::text("one")).await.unwrap();
    let mut echoes = c.bidi(outgoing).await.unwrap().into_inner();
    for text in ["one", "two", "three"] {
        if text != "one" {
            tx.send(Msg::text(text)).await.unwrap();
        }
        let echo = tokio::time::timeout(WAIT, echoes.message()).await.unwrap();
        assert_eq!(echo.unwrap().unwrap().text, text);
    }
    drop(tx);
    assert!(echoes.message().await.unwrap().is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_timeout_reaches_the_upstream() {
    let s = setup();
    let mut c = s.client("echo.grpc.test").await;
    let mut req = GrpcRequest::new(Msg::text("quick"));
    req.set_timeout(Duration::from_secs(5));
    let resp = c.unary(req).await.unwrap();
    assert!(
        resp.metadata().get("x-grpc-timeout").is_some(),
        "the upstream saw the deadline"
    );
    let mut req = GrpcRequest::new(Msg::text("sleep:3000"));
    req.set_timeout(Duration::from_millis(300));
    let started = Instant::now();
    let err = c.unary(req).await.unwrap_err();
    assert_eq!(err.code(), Code::DeadlineExceeded, "{err:?}");
    assert!(started.elapsed() < Duration::from_secs(2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gateway_errors_are_grpc_statuses() {
    let s = setup();
    let expect = |host: &'static str, code: Code, message: &'static str| {
        let addr = s.addr();
        async move {
            let mut c = GrpcClient::connect_as(addr, host).await.unwrap();
            let err = c.unary(GrpcRequest::new(Msg::text("x"))).await.unwrap_err();
            assert_eq!(
                (err.code(), err.message()),
                (code, message),
                "{host}: {err:?}"
            );
        }
    };
    // Kong's `kong.response.error` answers: the code's name as the message.
    expect("nowhere.test", Code::NotFound, "NotFound").await;
    expect("keyed.grpc.test", Code::Unauthenticated, "Unauthenticated").await;
    expect("nopeer.grpc.test", Code::Unavailable, "Unavailable").await;
    // nginx's 502 through Kong's error handler: its sentence as the message.
    let bad = "An invalid response was received from the upstream server";
    expect("down.grpc.test", Code::Internal, bad).await;
    // With the key, key-auth lets the call through.
    let mut c = s.client("keyed.grpc.test").await;
    let mut req = GrpcRequest::new(Msg::text("keyed"));
    req.metadata_mut()
        .insert("apikey", "alice-key".parse().unwrap());
    assert_eq!(c.unary(req).await.unwrap().into_inner().text, "keyed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_errors_are_headers_only() {
    let s = setup();
    // The raw response of a refused call: the HTTP status stays, the gRPC status is in the headers
    // and there is no body.
    let (client, url) = s.http("keyed.grpc.test", true);
    let resp = client
        .post(url)
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .body(vec![0u8, 0, 0, 0, 0])
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 401);
    let h = resp.headers().clone();
    assert_eq!(h["grpc-status"], "16");
    assert_eq!(h["grpc-message"], "Unauthenticated");
    assert_eq!(h["content-type"], "application/grpc");
    assert!(resp.bytes().await.unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kong_checks_requests_on_grpc_routes() {
    let s = setup();
    // gRPC's content type over HTTP/1.1: 426.
    let (client, url) = s.http("echo.grpc.test", false);
    let resp = client
        .post(url)
        .header("content-type", "application/grpc")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 426);
    assert_eq!(resp.headers()["upgrade"], "HTTP/2");
    // HTTP/2 but not gRPC: 415.
    let (client, url) = s.http("echo.grpc.test", true);
    let resp = client
        .post(url)
        .header("content-type", "text/plain")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 415);
    let body: serde_json::Value = resp.json().await.unwrap();
    assert_eq!(body["message"], "Non-gRPC request matched gRPC route");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_restarted_mid_stream_ends_the_call_and_serves_the_next() {
    let mut s = setup();
    let port = s.up.port();
    let mut c = s.client("echo.grpc.test").await;
    let req = GrpcRequest::new(Msg::text("slow:50"));
    let mut stream = c.server_stream(req).await.unwrap().into_inner();
    assert_eq!(stream.message().await.unwrap().unwrap().text, "0");
    // The upstream goes away in the middle of the stream: the call ends with an error, not a hang.
    drop(std::mem::replace(&mut s.up, GrpcUpstream::start()));
    let ended = tokio::time::timeout(WAIT, async {
        loop {
            match stream.message().await {
                Ok(Some(_)) => continue,
                Ok(None) => return None,
                Err(e) => return Some(e),
            }
        }
    });
    let err = ended
        .await
        .expect("the stream ends")
        .expect("with an error");
    assert_ne!(err.code(), Code::Ok);
    // Back on its port: the next call gets a new upstream connection.
    s.up = GrpcUpstream::on_port(port);
    let deadline = Instant::now() + WAIT;
    loop {
        match c.unary(GrpcRequest::new(Msg::text("again"))).await {
            Ok(r) => break assert_eq!(r.into_inner().text, "again"),
            // The upstream is still starting.
            Err(_) if Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(100)).await
            }
            Err(e) => panic!("no call after the restart: {e:?}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_grpcio_client() {
    let s = setup();
    let target = format!("127.0.0.1:{}", s.gw.proxy_port());
    let run = |authority: &str, text: &str, key: Option<&str>| {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/support/grpc_client.py");
        let out = std::process::Command::new("python3")
            .args([script, &target, authority, text])
            .args(key)
            .output()
            .expect("python3");
        let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
        let err = String::from_utf8_lossy(&out.stderr).to_string();
        (out.status.code().unwrap_or(-1), text, err)
    };
    let (code, out, err) = run("echo.grpc.test", "from python", None);
    assert_eq!((code, out.as_str()), (0, "ok from python"), "{err}");
    let (code, out, err) = run("keyed.grpc.test", "x", None);
    assert_eq!(
        (code, out.as_str()),
        (2, "status UNAUTHENTICATED Unauthenticated"),
        "{err}"
    );
    let (code, out, err) = run("keyed.grpc.test", "with key", Some("alice-key"));
    assert_eq!((code, out.as_str()), (0, "ok with key"), "{err}");
    let (code, out, err) = run("nowhere.test", "x", None);
    assert_eq!(
        (code, out.as_str()),
        (2, "status NOT_FOUND NotFound"),
        "{err}"
    );
}
