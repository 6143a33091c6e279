//! WebSocket over HTTP/2 (RFC 8441's extended CONNECT) through the real binary: an h2 client (the `h2`
//! crate, h2c prior knowledge) asks for `:protocol websocket`, the gateway bridges it to the HTTP/1.1
//! upgrade the testkit's WebSocket echo upstream speaks, and tokio-tungstenite frames messages over the h2
//! stream. Plugins answer before any upgrade, as over HTTP/1.1.

use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use sluice_testkit::{EchoUpstream, Gateway, WsEchoUpstream};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::http::{Method, Request};
use tokio_tungstenite::tungstenite::protocol::Role;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

const BIN: &str = env!("CARGO_BIN_EXE_sluice");
const WAIT: Duration = Duration::from_secs(10);

fn gateway(ws: &WsEchoUpstream) -> Gateway {
    let yaml = format!(
        r#"_format_version: "3.0"
services:
- name: ws
  url: http://127.0.0.1:{}
  routes:
  - {{name: open, paths: [/ws]}}
  - name: keyed
    paths: [/keyed]
    plugins: [{{name: key-auth}}]
consumers:
- username: alice
  keyauth_credentials: [{{key: alice-key}}]
"#,
        ws.port()
    );
    Gateway::builder(BIN).config_yaml(&yaml).start()
}

/// An extended CONNECT for `path` over a new h2c connection: the response status, and the stream as a
/// byte pipe when it is 200.
async fn connect(port: u16, path: &str, headers: &[(&str, &str)]) -> (u16, Option<DuplexStream>) {
    let tcp = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    let (mut client, conn) = h2::client::handshake(tcp).await.unwrap();
    tokio::spawn(conn);
    // The server's SETTINGS (with SETTINGS_ENABLE_CONNECT_PROTOCOL) arrive after the handshake.
    client = client.ready().await.unwrap();
    for _ in 0..100 {
        if client.is_extended_connect_protocol_enabled() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(client.is_extended_connect_protocol_enabled());
    let mut req = Request::builder()
        .method(Method::CONNECT)
        .uri(format!("http://127.0.0.1:{port}{path}"))
        .header("sec-websocket-version", "13")
        .extension(h2::ext::Protocol::from_static("websocket"));
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let (resp, mut send) = client.send_request(req.body(()).unwrap(), false).unwrap();
    let resp = tokio::time::timeout(WAIT, resp).await.unwrap().unwrap();
    let status = resp.status().as_u16();
    if status != 200 {
        return (status, None);
    }
    assert!(!resp.headers().contains_key("sec-websocket-accept"));
    let mut recv = resp.into_body();
    // The h2 stream as an in-memory pipe: one task each way.
    let (ours, theirs) = tokio::io::duplex(1 << 20);
    let (mut from_pipe, mut to_pipe) = tokio::io::split(theirs);
    tokio::spawn(async move {
        while let Some(Ok(data)) = recv.data().await {
            let _ = recv.flow_control().release_capacity(data.len());
            if to_pipe.write_all(&data).await.is_err() {
                break;
            }
        }
        let _ = to_pipe.shutdown().await;
    });
    tokio::spawn(async move {
        let mut buf = vec![0u8; 16 * 1024];
        loop {
            match from_pipe.read(&mut buf).await {
                Ok(0) | Err(_) => {
                    let _ = send.send_data(Bytes::new(), true);
                    break;
                }
                Ok(n) => {
                    if send
                        .send_data(Bytes::copy_from_slice(&buf[..n]), false)
                        .is_err()
                    {
                        break;
                    }
                }
            }
        }
    });
    (status, Some(ours))
}

async fn echoed(ws: &mut WebSocketStream<DuplexStream>, msg: Message) {
    ws.send(msg.clone()).await.unwrap();
    let got = tokio::time::timeout(WAIT, ws.next()).await.unwrap();
    assert_eq!(got.unwrap().unwrap(), msg);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn extended_connect_is_bridged_to_an_http1_upgrade() {
    let up = WsEchoUpstream::start();
    let gw = gateway(&up);
    let (status, pipe) = connect(gw.proxy_port(), "/ws/h2", &[]).await;
    assert_eq!(status, 200);
    let mut ws = WebSocketStream::from_raw_socket(pipe.unwrap(), Role::Client, None).await;
    echoed(&mut ws, Message::text("over h2")).await;
    echoed(&mut ws, Message::binary(vec![9u8; 1_000_000])).await;
    ws.close(None).await.unwrap();

    let hs = up.handshakes();
    let h = &hs.last().unwrap().headers;
    assert_eq!(hs.last().unwrap().path, "/h2");
    assert_eq!(h["upgrade"], "websocket");
    assert_eq!(h["connection"], "keep-alive, Upgrade");
    assert_eq!(h["sec-websocket-version"], "13");
    assert_eq!(h["sec-websocket-key"].len(), 24, "a fresh 16-byte key");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plugins_answer_an_extended_connect_before_the_upgrade() {
    let up = WsEchoUpstream::start();
    let gw = gateway(&up);
    let (status, _) = connect(gw.proxy_port(), "/keyed", &[]).await;
    assert_eq!(status, 401);
    assert!(up.handshakes().is_empty());
    let (status, pipe) = connect(gw.proxy_port(), "/keyed", &[("apikey", "alice-key")]).await;
    assert_eq!(status, 200);
    let mut ws = WebSocketStream::from_raw_socket(pipe.unwrap(), Role::Client, None).await;
    echoed(&mut ws, Message::text("authenticated over h2")).await;
}

/// An upstream that answers the upgrade with an ordinary 200 did not switch: the extended CONNECT gets 502,
/// never a 200 that would tell the client its tunnel is open (the stream was reset before).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_that_does_not_switch_is_a_bad_gateway() {
    let up = EchoUpstream::start();
    let yaml = format!(
        "_format_version: \"3.0\"\nservices:\n- name: plain\n  url: {}\n  routes:\n  - {{name: r, paths: [/plain]}}\n",
        up.url()
    );
    let gw = Gateway::builder(BIN).config_yaml(&yaml).start();
    let (status, _) = connect(gw.proxy_port(), "/plain", &[]).await;
    assert_eq!(status, 502);
    assert_eq!(up.requests(), 1);
}
