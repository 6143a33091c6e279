//! nginx's client-side gap timeouts (issue 17, defect 5): `client_body_timeout` between two reads of a
//! request body and `send_timeout` between two writes of a response. A client that stalls its body or
//! stops reading loses its request, and the upstream connection behind it is closed, not pooled; a client
//! that keeps moving, however slowly, is never cut.

mod common;

use common::Proxy;
use sluice_plugins::Registry;
use sluice_proxy::ProxySettings;
use sluice_testkit::EchoUpstream;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

const GAP: Duration = Duration::from_millis(500);
/// The large response: far more than the loopback socket buffers hold.
const BIG: usize = 64 * 1024 * 1024;

/// An upstream on a real socket that reports how each connection ended: `GET /big` gets a `BIG`-byte
/// response (reported when writing it fails: the gateway closed the connection); any other request is
/// read until the gateway closes the connection, never answered (reported at that end). The gateway's
/// routes to it stream (no request or response buffering), so that what the client does reaches it.
struct Watcher {
    port: u16,
    ended: mpsc::UnboundedReceiver<&'static str>,
}

impl Watcher {
    async fn start() -> Watcher {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let (tx, ended) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            while let Ok((conn, _)) = listener.accept().await {
                tokio::spawn(watch(conn, tx.clone()));
            }
        });
        Watcher { port, ended }
    }

    /// How the next connection ended, if it ended within `within`.
    async fn ended(&mut self, within: Duration) -> Option<&'static str> {
        tokio::time::timeout(within, self.ended.recv())
            .await
            .ok()
            .flatten()
    }
}

async fn watch(mut conn: TcpStream, tx: mpsc::UnboundedSender<&'static str>) {
    let mut seen = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match conn.read(&mut buf).await {
            Ok(0) | Err(_) => {
                let _ = tx.send("closed while the request was sent");
                return;
            }
            Ok(n) => seen.extend_from_slice(&buf[..n]),
        }
        if seen.starts_with(b"GET /big") && seen.windows(4).any(|w| w == b"\r\n\r\n") {
            break;
        }
    }
    let head = format!("HTTP/1.1 200 OK\r\ncontent-length: {BIG}\r\n\r\n");
    let _ = conn.write_all(head.as_bytes()).await;
    let piece = vec![b'x'; 64 * 1024];
    for _ in 0..BIG / piece.len() {
        if conn.write_all(&piece).await.is_err() {
            let _ = tx.send("closed while the response was sent");
            return;
        }
    }
    let _ = tx.send("response sent whole");
}

fn proxy(watcher: &Watcher, echo: &EchoUpstream) -> Proxy {
    let yaml = format!(
        "_format_version: \"3.0\"\nservices:\n- name: watched\n  url: http://127.0.0.1:{}\n  routes: [{{paths: [/w, /big], strip_path: false, request_buffering: false, response_buffering: false}}, {{paths: [/wb], strip_path: false}}]\n- name: echo\n  url: {}\n  routes: [{{paths: [/echo]}}]\n",
        watcher.port,
        echo.url()
    );
    let settings = ProxySettings {
        client_body_timeout: GAP,
        send_timeout: GAP,
        ..ProxySettings::default()
    };
    Proxy::with(&yaml, settings, Registry::builtin())
}

/// Reads what the gateway sends until it closes the connection (or 10 s pass).
async fn read_all(s: &mut TcpStream) -> String {
    let mut out = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut out)).await;
    String::from_utf8_lossy(&out).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_body_gets_408_and_its_upstream_request_is_abandoned() {
    let (mut watcher, echo) = (Watcher::start().await, EchoUpstream::start());
    let proxy = proxy(&watcher, &echo);
    for head in [
        "POST /w HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\nabc",
        "POST /w HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n",
    ] {
        let started = Instant::now();
        let mut s = TcpStream::connect(proxy.addr).await.unwrap();
        s.write_all(head.as_bytes()).await.unwrap();
        // Then nothing: the gateway answers 408 after the gap and closes the connection.
        let answer = read_all(&mut s).await;
        assert!(answer.starts_with("HTTP/1.1 408"), "{head:?}: {answer}");
        assert!(answer.contains("connection: close"), "{answer}");
        assert!(started.elapsed() < GAP * 4, "{:?}", started.elapsed());
        // The upstream's half-sent request is abandoned: its connection closed, not kept for reuse.
        let ended = watcher.ended(Duration::from_secs(2)).await;
        assert_eq!(ended, Some("closed while the request was sent"), "{head:?}");
    }
    // A route that buffers (Kong's default) gives the same answer without bothering the upstream.
    let mut s = TcpStream::connect(proxy.addr).await.unwrap();
    s.write_all(b"POST /wb HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\nabc")
        .await
        .unwrap();
    let answer = read_all(&mut s).await;
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert_eq!(
        watcher.ended(GAP).await,
        None,
        "the upstream was connected to"
    );
    // An upload that keeps moving, slower than the gap in all, is not cut.
    let mut s = TcpStream::connect(proxy.addr).await.unwrap();
    s.write_all(b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    for _ in 0..6 {
        tokio::time::sleep(GAP / 3).await;
        s.write_all(b"4\r\nabcd\r\n").await.unwrap();
    }
    s.write_all(b"0\r\n\r\n").await.unwrap();
    let answer = read_all(&mut s).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_body_gets_408_on_routes_with_plugins_too() {
    let mut watcher = Watcher::start().await;
    // key-auth with `key_in_body` reads the whole body before access; correlation-id lets it stream
    // (the route does not buffer).
    let yaml = format!(
        "_format_version: \"3.0\"\nservices:\n- name: watched\n  url: http://127.0.0.1:{}\n  routes:\n  - paths: [/buffered]\n    plugins: [{{name: key-auth, config: {{key_in_body: true}}}}]\n  - paths: [/streamed]\n    request_buffering: false\n    plugins: [{{name: correlation-id}}]\n",
        watcher.port
    );
    let settings = ProxySettings {
        client_body_timeout: GAP,
        ..ProxySettings::default()
    };
    let proxy = Proxy::with(&yaml, settings, Registry::builtin());
    for path in ["/buffered", "/streamed"] {
        let mut s = TcpStream::connect(proxy.addr).await.unwrap();
        let head = format!("POST {path} HTTP/1.1\r\nHost: t\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\n\r\napikey=");
        s.write_all(head.as_bytes()).await.unwrap();
        let answer = read_all(&mut s).await;
        assert!(answer.starts_with("HTTP/1.1 408"), "{path}: {answer}");
    }
    // Only the streamed one reached the upstream, and its request was abandoned there.
    let ended = watcher.ended(Duration::from_secs(2)).await;
    assert_eq!(ended, Some("closed while the request was sent"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_h2_body_gets_408_on_its_stream() {
    let (mut watcher, echo) = (Watcher::start().await, EchoUpstream::start());
    let proxy = proxy(&watcher, &echo);
    let tcp = TcpStream::connect(proxy.addr).await.unwrap();
    let (client, connection) = h2::client::handshake(tcp).await.expect("h2c handshake");
    tokio::spawn(connection);
    let mut client = client.ready().await.unwrap();
    let request = http::Request::post(format!("http://{}/w", proxy.addr))
        .header("content-length", "100")
        .body(())
        .unwrap();
    let started = Instant::now();
    let (response, mut body) = client.send_request(request, false).expect("send");
    body.send_data(bytes::Bytes::from_static(b"abc"), false)
        .unwrap();
    let response = tokio::time::timeout(Duration::from_secs(5), response)
        .await
        .expect("an answer within the gap")
        .expect("a response, not a reset");
    assert_eq!(response.status(), 408);
    assert!(started.elapsed() < GAP * 4, "{:?}", started.elapsed());
    let ended = watcher.ended(Duration::from_secs(2)).await;
    assert_eq!(ended, Some("closed while the request was sent"));
    // The connection still serves other streams.
    let mut client = client.ready().await.unwrap();
    let get = http::Request::get(format!("http://{}/echo", proxy.addr))
        .body(())
        .unwrap();
    let (response, _) = client.send_request(get, true).unwrap();
    assert_eq!(response.await.unwrap().status(), 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_stops_reading_is_closed_after_the_send_timeout() {
    let (mut watcher, echo) = (Watcher::start().await, EchoUpstream::start());
    let proxy = proxy(&watcher, &echo);
    let mut slow = TcpStream::connect(proxy.addr).await.unwrap();
    slow.write_all(b"GET /big HTTP/1.1\r\nHost: t\r\n\r\n")
        .await
        .unwrap();
    let mut first = [0u8; 64];
    slow.read_exact(&mut first).await.unwrap();
    assert!(first.starts_with(b"HTTP/1.1 200"));
    // The slow client reads nothing more. Others are served meanwhile, and a fast client takes a large
    // response whole.
    let (status, _, _) = common::get(proxy.url("/echo"), []).await;
    assert_eq!(status, 200);
    let fast = sluice_testkit::client()
        .get(proxy.url("/echo"))
        .header("x-echo-body-size", "8000000")
        .send()
        .await
        .unwrap();
    assert_eq!(fast.bytes().await.unwrap().len(), 8_000_000);
    // The gateway gives up on the slow client: the upstream connection behind it is closed mid-response.
    let ended = watcher.ended(GAP * 6).await;
    assert_eq!(ended, Some("closed while the response was sent"));
    // What the slow client gets now is what the socket buffers held, then the end: not the whole body.
    let mut rest = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), slow.read_to_end(&mut rest)).await;
    assert!(rest.len() < BIG / 2, "{} bytes", rest.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_h2_client_that_stops_reading_is_closed_after_the_send_timeout() {
    let (mut watcher, echo) = (Watcher::start().await, EchoUpstream::start());
    let proxy = proxy(&watcher, &echo);
    // By hand, so that nothing reads the socket afterwards: the preface, empty SETTINGS, and one HEADERS
    // frame (END_STREAM | END_HEADERS) for `GET /big` (HPACK: :method GET, :scheme http, literal :path
    // and :authority).
    let mut frames = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\x04\0\0\0\0\0".to_vec();
    let block = b"\x82\x86\x04\x04/big\x01\x01t";
    frames.extend_from_slice(&[0, 0, block.len() as u8, 0x01, 0x05, 0, 0, 0, 1]);
    frames.extend_from_slice(block);
    let mut silent = TcpStream::connect(proxy.addr).await.unwrap();
    silent.write_all(&frames).await.unwrap();
    // The response starts, then waits on the client, which reads nothing: the gateway's PING goes
    // unanswered, and the connection closes with the upstream connection behind it.
    let ended = watcher.ended(GAP * 6).await;
    assert_eq!(ended, Some("closed while the response was sent"));
    let (status, _, _) = common::get(proxy.url("/echo"), []).await;
    assert_eq!(status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_abandoned_body_trickled_past_the_drain_limit_closes_the_connection() {
    let watcher = Watcher::start().await;
    // key-auth answers 401 without reading the body: its rest is discarded to keep the connection, but
    // only up to 64 KiB in all, however it is spread over reads.
    let yaml = format!(
        "_format_version: \"3.0\"\nservices:\n- name: watched\n  url: http://127.0.0.1:{}\n  routes:\n  - paths: [/denied]\n    plugins: [{{name: key-auth}}]\n",
        watcher.port
    );
    let settings = ProxySettings {
        client_body_timeout: GAP,
        ..ProxySettings::default()
    };
    let proxy = Proxy::with(&yaml, settings, Registry::builtin());
    let mut s = TcpStream::connect(proxy.addr).await.unwrap();
    s.write_all(b"POST /denied HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n")
        .await
        .unwrap();
    let piece = format!("2000\r\n{}\r\n", "a".repeat(0x2000));
    let mut sent_all = true;
    for _ in 0..12 {
        tokio::time::sleep(Duration::from_millis(50)).await;
        if s.write_all(piece.as_bytes()).await.is_err() {
            sent_all = false;
            break;
        }
    }
    if sent_all {
        let _ = s.write_all(b"0\r\n\r\n").await;
    }
    // 96 KiB trickled: the gateway answered 401 and closes instead of keeping the connection (the
    // closing may reset it, as the client was still sending: then the 401 may be lost, not the end).
    let mut out = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(3), s.read_to_end(&mut out)).await;
    assert!(
        read.is_ok(),
        "the connection stayed open after 96 KiB were discarded"
    );
    let answer = String::from_utf8_lossy(&out);
    assert!(
        out.is_empty() || answer.starts_with("HTTP/1.1 401"),
        "{answer}"
    );
}
