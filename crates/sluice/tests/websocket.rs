//! WebSocket proxying through the real binary, with two independent clients (tokio-tungstenite and
//! Python's `websockets`, `tests/support/ws_client.py`) against the testkit's WebSocket echo upstream:
//! messages both ways (text, binary, large, and bytes the upstream sends right behind its 101), close from
//! either side, the service's read timeout closing an idle tunnel, key-auth answering before any upgrade,
//! the log record written when the tunnel closes (sizes counted as nginx does), a refused handshake, an
//! upgrade other than websocket (sent upstream as an ordinary request, as Kong does), and TLS on the
//! client's side.

use futures_util::{SinkExt, StreamExt};
use serde_json::Value;
use sluice_testkit::{insecure_client, EchoUpstream, Gateway, WsEchoUpstream};
use std::path::Path;
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::{HeaderName, HeaderValue};
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::{Error, Message};
use tokio_tungstenite::WebSocketStream;

const BIN: &str = env!("CARGO_BIN_EXE_sluice");
const WAIT: Duration = Duration::from_secs(10);

/// Routes `/ws` (no plugins), `/keyed` (key-auth), `/logged` (file-log to `log`) and `/refuse` on the
/// WebSocket upstream; `/idle` on it through a service with a 1 s read timeout; `/plain` on the HTTP echo.
fn config(ws: u16, echo: u16, log: &Path) -> String {
    format!(
        r#"_format_version: "3.0"
services:
- name: ws
  url: http://127.0.0.1:{ws}
  routes:
  - {{name: open, paths: [/ws]}}
  - {{name: greet, paths: [/greet], strip_path: false}}
  - {{name: refuse, paths: [/refuse], strip_path: false}}
  - name: keyed
    paths: [/keyed]
    plugins: [{{name: key-auth}}]
  - name: logged
    paths: [/logged]
    plugins: [{{name: file-log, config: {{path: '{log}'}}}}]
- name: idle
  url: http://127.0.0.1:{ws}
  read_timeout: 1000
  routes: [{{name: idle, paths: [/idle]}}]
- name: plain
  url: http://127.0.0.1:{echo}
  routes: [{{name: plain, paths: [/plain]}}]
consumers:
- username: alice
  keyauth_credentials: [{{key: alice-key}}]
"#,
        log = log.display()
    )
}

struct Setup {
    ws: WsEchoUpstream,
    _echo: EchoUpstream,
    gw: Gateway,
    log: tempfile::TempDir,
}

fn setup() -> Setup {
    let (ws, echo) = (WsEchoUpstream::start(), EchoUpstream::start());
    let log = tempfile::tempdir().unwrap();
    let yaml = config(ws.port(), echo.port(), &log.path().join("ws.log"));
    let gw = Gateway::builder(BIN).config_yaml(&yaml).start();
    Setup {
        ws,
        _echo: echo,
        gw,
        log,
    }
}

/// A WebSocket handshake over `stream` for `url`, with extra request headers.
async fn open_on<S: AsyncRead + AsyncWrite + Unpin>(
    stream: S,
    url: &str,
    headers: &[(&str, &str)],
) -> Result<WebSocketStream<S>, Error> {
    let mut req = url.into_client_request().unwrap();
    for (k, v) in headers {
        req.headers_mut().insert(
            HeaderName::from_bytes(k.as_bytes()).unwrap(),
            HeaderValue::from_str(v).unwrap(),
        );
    }
    let (ws, resp) = tokio_tungstenite::client_async(req, stream).await?;
    assert_eq!(resp.status(), 101);
    assert!(resp.headers().contains_key("via"), "{resp:?}");
    Ok(ws)
}

async fn open(port: u16, path: &str, headers: &[(&str, &str)]) -> Result<WsClient, Error> {
    let tcp = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    open_on(tcp, &format!("ws://127.0.0.1:{port}{path}"), headers).await
}

type WsClient = WebSocketStream<TcpStream>;

/// The next message, within [`WAIT`].
async fn next<S: AsyncRead + AsyncWrite + Unpin>(
    ws: &mut WebSocketStream<S>,
) -> Option<Result<Message, Error>> {
    tokio::time::timeout(WAIT, ws.next())
        .await
        .expect("a message or the end within the wait")
}

async fn echoed<S: AsyncRead + AsyncWrite + Unpin>(ws: &mut WebSocketStream<S>, msg: Message) {
    ws.send(msg.clone()).await.unwrap();
    assert_eq!(next(ws).await.unwrap().unwrap(), msg);
}

/// The status a refused handshake got.
fn refused_status(e: Error) -> u16 {
    match e {
        Error::Http(resp) => resp.status().as_u16(),
        other => panic!("expected an HTTP answer, got {other}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_go_both_ways_through_the_tunnel() {
    let s = setup();
    let mut ws = open(s.gw.proxy_port(), "/ws/chat?room=1", &[])
        .await
        .unwrap();
    echoed(&mut ws, Message::text("héllo")).await;
    echoed(&mut ws, Message::binary(vec![0u8, 1, 2, 255])).await;
    let large: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
    echoed(&mut ws, Message::binary(large)).await;
    for i in 0..50 {
        echoed(&mut ws, Message::text(format!("message {i}"))).await;
    }
    ws.close(None).await.unwrap();

    // What the upstream got: Kong's upgrade lines and the client's Sec-WebSocket-* fields.
    let hs = s.ws.handshakes();
    let h = &hs.last().unwrap().headers;
    assert_eq!(hs.last().unwrap().path, "/chat");
    assert_eq!(h["upgrade"], "websocket");
    assert_eq!(h["connection"], "keep-alive, Upgrade");
    assert_eq!(h["sec-websocket-version"], "13");
    assert!(h.contains_key("sec-websocket-key"));
    assert_eq!(h["x-forwarded-for"], "127.0.0.1");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bytes_sent_right_behind_the_101_reach_the_client() {
    let s = setup();
    let mut ws = open(s.gw.proxy_port(), "/greet", &[]).await.unwrap();
    assert_eq!(
        next(&mut ws).await.unwrap().unwrap(),
        Message::text("hello")
    );
    echoed(&mut ws, Message::text("after")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn either_side_can_close() {
    let s = setup();
    let port = s.gw.proxy_port();
    // The client closes: the upstream's close frame answers, then the stream ends.
    let mut ws = open(port, "/ws", &[]).await.unwrap();
    echoed(&mut ws, Message::text("one")).await;
    ws.close(None).await.unwrap();
    match next(&mut ws).await {
        Some(Ok(Message::Close(_))) | None => {}
        other => panic!("expected the close handshake to finish, got {other:?}"),
    }
    assert!(matches!(next(&mut ws).await, None | Some(Err(_))));

    // The upstream closes: its close frame arrives with its code and reason.
    let mut ws = open(port, "/ws", &[]).await.unwrap();
    ws.send(Message::text("close")).await.unwrap();
    match next(&mut ws).await {
        Some(Ok(Message::Close(Some(frame)))) => {
            assert_eq!(frame.code, CloseCode::Normal);
            assert_eq!(frame.reason.as_str(), "bye");
        }
        other => panic!("expected the upstream's close frame, got {other:?}"),
    }
    assert!(matches!(next(&mut ws).await, None | Some(Err(_))));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_read_timeout_closes_an_idle_tunnel() {
    let s = setup();
    let mut ws = open(s.gw.proxy_port(), "/idle", &[]).await.unwrap();
    // Traffic every 400 ms keeps it open well past the 1 s read timeout.
    for i in 0..6 {
        tokio::time::sleep(Duration::from_millis(400)).await;
        echoed(&mut ws, Message::text(format!("keepalive {i}"))).await;
    }
    let idle_from = Instant::now();
    // Silence: the gateway closes the tunnel (no close frame: nginx closes the connections).
    match next(&mut ws).await {
        None | Some(Err(_)) => {}
        other => panic!("expected the tunnel to close, got {other:?}"),
    }
    let idle = idle_from.elapsed();
    assert!(
        idle >= Duration::from_millis(900) && idle < Duration::from_secs(5),
        "{idle:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn key_auth_answers_before_any_upgrade() {
    let s = setup();
    let port = s.gw.proxy_port();
    let e = open(port, "/keyed", &[])
        .await
        .expect_err("no key, no upgrade");
    assert_eq!(refused_status(e), 401);
    let e = open(port, "/keyed", &[("apikey", "wrong")])
        .await
        .expect_err("refused");
    assert_eq!(refused_status(e), 401);
    assert!(
        s.ws.handshakes().is_empty(),
        "refused requests never reach the upstream"
    );
    let mut ws = open(port, "/keyed", &[("apikey", "alice-key")])
        .await
        .unwrap();
    echoed(&mut ws, Message::text("authenticated")).await;
    let hs = s.ws.handshakes();
    assert_eq!(hs.len(), 1);
    assert_eq!(hs[0].headers["x-consumer-username"], "alice");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_log_phase_runs_when_the_tunnel_closes() {
    let s = setup();
    let path = s.log.path().join("ws.log");
    let mut ws = open(s.gw.proxy_port(), "/logged", &[]).await.unwrap();
    echoed(&mut ws, Message::binary(vec![7u8; 10_000])).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(
        std::fs::read_to_string(&path)
            .unwrap_or_default()
            .is_empty(),
        "no record while the tunnel is open"
    );
    ws.close(None).await.unwrap();
    while let Some(Ok(_)) = next(&mut ws).await {}
    let deadline = Instant::now() + WAIT;
    let line = loop {
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        if let Some(line) = text.lines().next() {
            break line.to_string();
        }
        assert!(Instant::now() < deadline, "no log record after the close");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let record: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(record["response"]["status"], 101);
    assert_eq!(record["upstream_status"], "101");
    assert_eq!(record["route"]["name"], "logged");
    // As nginx counts them: the response's size has the 101 head and every tunnel byte sent to the client
    // (the echoed 10,000-byte frame is 10,004, the upstream's close frame at least 2); the request's is the
    // handshake request alone.
    let (up, down) = (
        record["request"]["size"].as_u64().unwrap(),
        record["response"]["size"].as_u64().unwrap(),
    );
    assert!((100..2_000).contains(&up), "request size {up}");
    assert!((10_106..12_000).contains(&down), "response size {down}");
    assert!(record["latencies"]["request"].as_u64() >= Some(1500));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_handshake_is_an_ordinary_response() {
    let s = setup();
    let e = open(s.gw.proxy_port(), "/refuse", &[])
        .await
        .expect_err("refused");
    assert_eq!(refused_status(e), 403);
    // The gateway goes on serving upgrades.
    let mut ws = open(s.gw.proxy_port(), "/ws", &[]).await.unwrap();
    echoed(&mut ws, Message::text("still here")).await;
}

/// One raw HTTP/1.1 exchange on `conn`: the response's head and JSON body (the echo's).
async fn raw_exchange(conn: &mut TcpStream, request: &str) -> (String, Value) {
    conn.write_all(request.as_bytes()).await.unwrap();
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let n = tokio::time::timeout(WAIT, conn.read(&mut chunk))
            .await
            .unwrap()
            .unwrap();
        assert!(n > 0, "closed early: {}", String::from_utf8_lossy(&buf));
        buf.extend_from_slice(&chunk[..n]);
        let text = String::from_utf8_lossy(&buf).to_string();
        let Some((head, body)) = text.split_once("\r\n\r\n") else {
            continue;
        };
        let length: usize = head
            .lines()
            .find_map(|l| {
                l.to_ascii_lowercase()
                    .strip_prefix("content-length:")
                    .map(|v| v.trim().parse().unwrap())
            })
            .expect("a content-length");
        if body.len() >= length {
            return (head.to_string(), serde_json::from_str(body).unwrap());
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_upgrades_go_upstream_as_ordinary_requests() {
    let s = setup();
    let mut conn = TcpStream::connect(("127.0.0.1", s.gw.proxy_port()))
        .await
        .unwrap();
    let request = "GET /plain HTTP/1.1\r\nHost: a.test\r\nConnection: Upgrade, HTTP2-Settings\r\n\
                   Upgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n";
    let (head, echo) = raw_exchange(&mut conn, request).await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let headers = &echo["headers"];
    assert!(headers.get("upgrade").is_none(), "{headers}");
    assert!(headers.get("http2-settings").is_none(), "{headers}");
    assert!(
        headers.get("connection").is_none_or(|c| c != "Upgrade"),
        "{headers}"
    );
    // The connection stays an HTTP/1.1 connection.
    let (head, _) = raw_exchange(&mut conn, "GET /plain HTTP/1.1\r\nHost: a.test\r\n\r\n").await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wss_on_the_https_listener() {
    let s = setup();
    let port = s.gw.proxy_tls_port();
    let tcp = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    let name = tokio_rustls::rustls::pki_types::ServerName::try_from("ws.test").unwrap();
    let tls = tokio_rustls::TlsConnector::from(insecure_client(&["http/1.1"], false))
        .connect(name, tcp)
        .await
        .unwrap();
    let mut ws = open_on(tls, &format!("wss://ws.test:{port}/ws"), &[])
        .await
        .unwrap();
    echoed(&mut ws, Message::text("over tls")).await;
    echoed(&mut ws, Message::binary(vec![1u8; 200_000])).await;
    ws.close(None).await.unwrap();
    assert_eq!(
        s.ws.handshakes().last().unwrap().headers["x-forwarded-proto"],
        "https"
    );
}

/// Python's `websockets` (`pip install websockets`): the script's checks, over ws:// and wss://.
fn python_client(url: &str, headers: &[&str]) -> (i32, String) {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/support/ws_client.py");
    let out = std::process::Command::new("python3")
        .arg(script)
        .arg(url)
        .args(headers)
        .output()
        .expect("python3");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), text)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_websockets_client() {
    let s = setup();
    let (port, tls) = (s.gw.proxy_port(), s.gw.proxy_tls_port());
    let (code, out) = python_client(&format!("ws://127.0.0.1:{port}/ws"), &[]);
    assert_eq!((code, out.trim()), (0, "ok"), "{out}");
    let (code, out) = python_client(&format!("wss://127.0.0.1:{tls}/ws"), &[]);
    assert_eq!((code, out.trim()), (0, "ok"), "{out}");
    let (code, out) = python_client(&format!("ws://127.0.0.1:{port}/keyed"), &[]);
    assert_eq!((code, out.trim()), (2, "status 401"), "{out}");
    let url = format!("ws://127.0.0.1:{port}/keyed");
    let (code, out) = python_client(&url, &["apikey: alice-key"]);
    assert_eq!((code, out.trim()), (0, "ok"), "{out}");
}
