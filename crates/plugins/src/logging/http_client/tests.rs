//! The log thread's HTTP client against a real local endpoint: one kept-alive connection for many
//! deliveries, a new one when the endpoint closed the kept one (with `Connection: close` or silently),
//! idle connections closed when their keepalive ends, what is sent, the time limit, and https (the
//! certificate checked or not).

use super::{HttpClient, Limits};
use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method};
use sluice_tls::rustls::ServerConfig;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpListener;

/// How the endpoint treats a connection after answering a request.
#[derive(Clone, Copy, PartialEq)]
enum After {
    /// Keeps it open for the next request.
    KeepOpen,
    /// Says `Connection: close` and closes it.
    SayClose,
    /// Closes it without saying so (as a server whose own idle timeout fired).
    CloseSilently,
    /// Never answers.
    Hang,
}

/// What the endpoint saw.
#[derive(Default)]
struct Seen {
    connections: usize,
    /// Connections the client closed.
    closed_by_client: usize,
    /// Each request's head (as text) and body.
    requests: Vec<(String, Vec<u8>)>,
}

/// A local HTTP/1.1 endpoint answering `200 ok`; its address and what it saw.
async fn endpoint(after: After) -> (String, Arc<Mutex<Seen>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap().to_string();
    let seen = Arc::new(Mutex::new(Seen::default()));
    let shared = seen.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            shared.lock().unwrap().connections += 1;
            tokio::spawn(serve(stream, after, shared.clone()));
        }
    });
    (address, seen)
}

/// The same endpoint over TLS, with a self-signed certificate for `localhost`.
async fn tls_endpoint() -> (String, Arc<Mutex<Seen>>) {
    let dir = tempfile::tempdir().unwrap();
    sluice_tls::default_pair(dir.path()).unwrap();
    let read = |file| std::fs::read_to_string(dir.path().join(file)).unwrap();
    let certs = sluice_tls::certificates(&read(sluice_tls::DEFAULT_CERT_FILE)).unwrap();
    let key = sluice_tls::private_key(&read(sluice_tls::DEFAULT_KEY_FILE)).unwrap();
    let config = ServerConfig::builder_with_provider(sluice_tls::provider())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Arc::new(Mutex::new(Seen::default()));
    let shared = seen.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            shared.lock().unwrap().connections += 1;
            let (acceptor, shared) = (acceptor.clone(), shared.clone());
            tokio::spawn(async move {
                if let Ok(tls) = acceptor.accept(stream).await {
                    serve(tls, After::KeepOpen, shared).await;
                }
            });
        }
    });
    (format!("localhost:{port}"), seen)
}

async fn serve<S: AsyncRead + AsyncWrite + Unpin>(
    mut stream: S,
    after: After,
    seen: Arc<Mutex<Seen>>,
) {
    let mut buf = Vec::new();
    loop {
        let Some((head, body)) = read_request(&mut stream, &mut buf).await else {
            seen.lock().unwrap().closed_by_client += 1;
            return;
        };
        seen.lock().unwrap().requests.push((head, body));
        let answer: &[u8] = match after {
            After::Hang => {
                tokio::time::sleep(Duration::from_secs(60)).await;
                return;
            }
            After::SayClose => {
                b"HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 2\r\n\r\nok"
            }
            _ => b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok",
        };
        stream.write_all(answer).await.unwrap();
        match after {
            After::KeepOpen => {}
            // Later, when the client has kept the connection for its next request.
            After::CloseSilently => {
                tokio::time::sleep(Duration::from_millis(20)).await;
                return;
            }
            _ => return,
        }
    }
}

/// One request (head text and `content-length` body) from `stream`; None when the client closed.
async fn read_request<S: AsyncRead + Unpin>(
    stream: &mut S,
    buf: &mut Vec<u8>,
) -> Option<(String, Vec<u8>)> {
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).into_owned();
            let length: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length: "))
                .map_or(0, |n| n.trim().parse().unwrap());
            if buf.len() >= end + 4 + length {
                let body = buf[end + 4..end + 4 + length].to_vec();
                buf.drain(..end + 4 + length);
                return Some((head, body));
            }
        }
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

fn client(url: &str, headers: HeaderMap, keepalive: Option<Duration>) -> HttpClient {
    checked_client(url, headers, keepalive, false)
}

fn checked_client(
    url: &str,
    headers: HeaderMap,
    keepalive: Option<Duration>,
    verify: bool,
) -> HttpClient {
    let limits = Limits {
        connect: Duration::from_secs(2),
        total: Duration::from_millis(500),
        keepalive,
    };
    HttpClient::new(&url.parse().unwrap(), Method::PUT, headers, limits, verify).unwrap()
}

async fn send(client: &HttpClient, body: &'static str) {
    let response = client.send(Bytes::from_static(body.as_bytes())).await;
    let response = response.expect("delivered");
    assert_eq!((response.status, &response.body[..]), (200, &b"ok"[..]));
}

#[tokio::test]
async fn deliveries_reuse_one_kept_alive_connection_and_send_what_they_were_given() {
    let (address, seen) = endpoint(After::KeepOpen).await;
    let mut headers = HeaderMap::new();
    headers.insert("x-custom", HeaderValue::from_static("yes"));
    let url = format!("http://user:p%40ss@{address}/logs?a=1");
    let client = client(&url, headers, Some(Duration::from_secs(60)));
    for body in ["one", "two", "three"] {
        send(&client, body).await;
    }
    let seen = seen.lock().unwrap();
    assert_eq!(seen.connections, 1, "one connection for every delivery");
    let bodies: Vec<&[u8]> = seen.requests.iter().map(|(_, b)| &b[..]).collect();
    assert_eq!(bodies, [&b"one"[..], b"two", b"three"]);
    let head = &seen.requests[0].0;
    assert!(head.starts_with("PUT /logs?a=1 HTTP/1.1\r\n"), "{head}");
    assert!(head.contains(&format!("\r\nhost: {address}")), "{head}");
    assert!(head.contains("\r\nx-custom: yes"), "{head}");
    // `user:p%40ss` as written, base64: lua-resty-http sends the user info undecoded.
    assert!(
        head.contains("\r\nauthorization: Basic dXNlcjpwJTQwc3M="),
        "{head}"
    );
}

#[tokio::test]
async fn a_connection_the_endpoint_closed_is_replaced() {
    for after in [After::SayClose, After::CloseSilently] {
        let (address, seen) = endpoint(after).await;
        let client = client(&format!("http://{address}/"), HeaderMap::new(), None);
        for body in ["one", "two", "three"] {
            send(&client, body).await;
            // Lets the close reach the client, as between deliveries of a real queue.
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let seen = seen.lock().unwrap();
        assert_eq!((seen.connections, seen.requests.len()), (3, 3));
    }
}

#[tokio::test]
async fn an_idle_connection_is_closed_when_its_keepalive_ends() {
    let (address, seen) = endpoint(After::KeepOpen).await;
    let client = client(
        &format!("http://{address}/"),
        HeaderMap::new(),
        Some(Duration::from_millis(100)),
    );
    send(&client, "one").await;
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert_eq!(seen.lock().unwrap().closed_by_client, 0, "kept while fresh");
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(
        seen.lock().unwrap().closed_by_client,
        1,
        "closed by the client without another delivery"
    );
    send(&client, "two").await;
    assert_eq!(seen.lock().unwrap().connections, 2);
}

#[tokio::test]
async fn an_endpoint_that_never_answers_is_a_timeout() {
    let (address, _seen) = endpoint(After::Hang).await;
    let client = client(&format!("http://{address}/"), HeaderMap::new(), None);
    let started = std::time::Instant::now();
    let error = client.send(Bytes::from_static(b"x")).await.err();
    assert_eq!(error.as_deref(), Some("timeout"));
    assert!(started.elapsed() < Duration::from_secs(2));
}

/// http-log (`verify` off, as Kong) delivers to a self-signed https endpoint over one kept connection;
/// the exporters (`verify` on) refuse it.
#[tokio::test]
async fn https_endpoints_with_and_without_checking_the_certificate() {
    let (address, seen) = tls_endpoint().await;
    let url = format!("https://{address}/logs");
    let unchecked = client(&url, HeaderMap::new(), None);
    send(&unchecked, "one").await;
    send(&unchecked, "two").await;
    {
        let seen = seen.lock().unwrap();
        assert_eq!((seen.connections, seen.requests.len()), (1, 2));
        assert!(seen.requests[0].0.starts_with("PUT /logs HTTP/1.1\r\n"));
        assert!(seen.requests[0].0.contains(&format!("\r\nhost: {address}")));
    }
    let checked = checked_client(&url, HeaderMap::new(), None, true);
    let error = checked.send(Bytes::from_static(b"x")).await.err();
    assert!(
        error.as_deref().is_some_and(|e| e.contains("certificate")),
        "{error:?}"
    );
    assert_eq!(
        seen.lock().unwrap().requests.len(),
        2,
        "nothing sent unchecked"
    );
}
