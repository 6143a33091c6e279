//! The echo upstream and servers that fail on purpose.
//!
//! [`EchoUpstream`] answers every request with JSON describing it. Request headers steer it:
//! `x-echo-status: 503`, `x-echo-delay-ms: 200` (before the response head), `x-echo-body-size: N` (N bytes of
//! `a` instead of JSON), `x-echo-set-header: name: value` (repeatable). The path `/__close` closes the
//! connection without an answer.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo};
use serde_json::{json, Map, Value};
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::oneshot;

/// A server on its own thread and runtime; stops when dropped.
pub(crate) struct Background {
    pub(crate) addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Background {
    pub(crate) fn start<F, Fut>(serve: F) -> Background
    where
        F: FnOnce(tokio::net::TcpListener) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = ()> + 'static,
    {
        Background::on_port(0, serve)
    }

    /// A server on 127.0.0.1:`port` (0 = any free port).
    pub(crate) fn on_port<F, Fut>(port: u16, serve: F) -> Background
    where
        F: FnOnce(tokio::net::TcpListener) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = ()> + 'static,
    {
        Background::at(SocketAddr::from(([127, 0, 0, 1], port)), serve)
    }

    /// A server on `addr` (port 0 = any free port).
    pub(crate) fn at<F, Fut>(addr: SocketAddr, serve: F) -> Background
    where
        F: FnOnce(tokio::net::TcpListener) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = ()> + 'static,
    {
        let std_listener = TcpListener::bind(addr).unwrap_or_else(|e| panic!("bind {addr}: {e}"));
        std_listener.set_nonblocking(true).expect("nonblocking");
        let addr = std_listener.local_addr().expect("local addr");
        let (stop, stopped) = oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            let local = tokio::task::LocalSet::new();
            local.block_on(&rt, async move {
                let listener = tokio::net::TcpListener::from_std(std_listener).expect("listener");
                tokio::select! {
                    _ = serve(listener) => {}
                    _ = stopped => {}
                }
            });
        });
        Background {
            addr,
            stop: Some(stop),
            thread: Some(thread),
        }
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// An upstream that answers with a JSON description of each request.
pub struct EchoUpstream {
    server: Background,
    requests: Arc<AtomicU64>,
}

impl EchoUpstream {
    pub fn start() -> EchoUpstream {
        EchoUpstream::named("echo")
    }

    /// An echo upstream whose responses carry `"upstream": name` (for load-balancing tests).
    pub fn named(name: &str) -> EchoUpstream {
        EchoUpstream::named_at(name, SocketAddr::from(([127, 0, 0, 1], 0)))
    }

    /// A named echo upstream on `addr` — another loopback address such as 127.0.0.2 or `[::1]`, or a port
    /// shared with an upstream on another address (for DNS tests, where only the address changes).
    pub fn named_at(name: &str, addr: SocketAddr) -> EchoUpstream {
        let requests = Arc::new(AtomicU64::new(0));
        let counter = requests.clone();
        let name: Arc<str> = name.into();
        let server = Background::at(addr, move |listener| async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let counter = counter.clone();
                let name = name.clone();
                tokio::task::spawn_local(serve_echo(stream, name, Some(counter), None));
            }
        });
        EchoUpstream { server, requests }
    }

    pub fn addr(&self) -> SocketAddr {
        self.server.addr
    }

    pub fn port(&self) -> u16 {
        self.server.addr.port()
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.server.addr)
    }

    /// Requests answered so far (including `/__close` attempts).
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::SeqCst)
    }
}

/// What a TLS upstream saw of the gateway's handshake (echoed as `"tls"`).
#[derive(Debug, Clone)]
pub(crate) struct TlsSeen {
    pub sni: Option<String>,
    pub client_cert: bool,
}

/// Serves the echo on one accepted connection, counting requests in `counter`.
pub(crate) async fn serve_echo<IO>(
    io: IO,
    name: Arc<str>,
    counter: Option<Arc<AtomicU64>>,
    tls: Option<TlsSeen>,
) where
    IO: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let service = service_fn(move |mut req: Request<hyper::body::Incoming>| {
        if let Some(c) = &counter {
            c.fetch_add(1, Ordering::SeqCst);
        }
        if let Some(seen) = &tls {
            req.extensions_mut().insert(seen.clone());
        }
        respond(req, name.clone())
    });
    let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
        .serve_connection(TokioIo::new(io), service)
        .await;
}

#[derive(Debug)]
pub(crate) struct Close;

impl std::fmt::Display for Close {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("closing on request")
    }
}

impl std::error::Error for Close {}

pub(crate) async fn respond(
    req: Request<hyper::body::Incoming>,
    name: Arc<str>,
) -> Result<Response<Full<Bytes>>, Close> {
    if req.uri().path() == "/__close" {
        return Err(Close);
    }
    let header = |n: &str| {
        req.headers()
            .get(n)
            .and_then(|v| v.to_str().ok())
            .map(String::from)
    };
    if let Some(ms) = header("x-echo-delay-ms").and_then(|v| v.parse().ok()) {
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }
    let status = header("x-echo-status")
        .and_then(|v| v.parse().ok())
        .unwrap_or(200u16);
    let body_size: Option<usize> = header("x-echo-body-size").and_then(|v| v.parse().ok());
    let set_headers: Vec<String> = req
        .headers()
        .get_all("x-echo-set-header")
        .iter()
        .filter_map(|v| v.to_str().ok().map(String::from))
        .collect();
    let mut headers = Map::new();
    for (k, v) in req.headers() {
        let v = Value::from(String::from_utf8_lossy(v.as_bytes()).into_owned());
        match headers.get_mut(k.as_str()) {
            Some(Value::Array(list)) => list.push(v),
            Some(prev) => *prev = json!([prev.clone(), v]),
            None => {
                headers.insert(k.as_str().to_string(), v);
            }
        }
    }
    let (method, uri, version) = (req.method().to_string(), req.uri().clone(), req.version());
    let tls = req
        .extensions()
        .get::<TlsSeen>()
        .map(|t| json!({"sni": t.sni, "client_cert": t.client_cert}));
    let body = req
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let payload = match body_size {
        Some(n) => Bytes::from(vec![b'a'; n]),
        None => Bytes::from(
            json!({
                "upstream": &*name,
                "method": method,
                "path": uri.path(),
                "query": uri.query(),
                "uri": uri.to_string(),
                "version": format!("{version:?}"),
                "headers": headers,
                "body": String::from_utf8_lossy(&body),
                "body_len": body.len(),
                "tls": tls,
            })
            .to_string(),
        ),
    };
    let mut resp = Response::builder().status(status);
    if body_size.is_none() {
        resp = resp.header("content-type", "application/json");
    }
    for h in set_headers {
        if let Some((k, v)) = h.split_once(':') {
            resp = resp.header(k.trim(), v.trim());
        }
    }
    Ok(resp
        .body(Full::new(payload))
        .unwrap_or_else(|_| Response::new(Full::new(Bytes::new()))))
}

/// Accepts connections and never answers (for read timeouts).
pub struct SilentServer {
    server: Background,
}

impl SilentServer {
    pub fn start() -> SilentServer {
        let server = Background::start(|listener| async move {
            let mut held = Vec::new();
            while let Ok((stream, _)) = listener.accept().await {
                held.push(stream);
            }
        });
        SilentServer { server }
    }

    pub fn port(&self) -> u16 {
        self.server.addr.port()
    }
}

/// A port on 127.0.0.1 with nothing listening now, for a server the test starts on it later. Another
/// test's server may take it meanwhile: a port that must stay refused is [`closed_port`]'s.
pub fn unused_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = l.local_addr().expect("addr").port();
    drop(l);
    port
}

/// A port on 127.0.0.1 with nothing listening, for the test process's life (connections are refused).
pub fn closed_port() -> u16 {
    use socket2::{Domain, Socket, Type};
    // Bound but never listening: a connection is refused, and the port stays this process's, so a server
    // another test starts meanwhile cannot take it (a port merely closed again could be handed out anew).
    let socket = Socket::new(Domain::IPV4, Type::STREAM, None).expect("socket");
    let any: std::net::SocketAddr = "127.0.0.1:0".parse().expect("addr");
    socket.bind(&any.into()).expect("bind");
    let port = socket
        .local_addr()
        .ok()
        .and_then(|a| a.as_socket())
        .expect("addr")
        .port();
    // Held for the test process's life.
    std::mem::forget(socket);
    port
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn echoes_and_obeys_control_headers() {
        let up = EchoUpstream::named("a");
        let c = crate::client();
        let v: Value = c
            .get(format!("{}/x?y=1", up.url()))
            .header("x-t", "1")
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(
            (
                v["upstream"].as_str(),
                v["path"].as_str(),
                v["query"].as_str()
            ),
            (Some("a"), Some("/x"), Some("y=1"))
        );
        assert_eq!(v["headers"]["x-t"], "1");
        let r = c
            .get(up.url())
            .header("x-echo-status", "503")
            .header("x-echo-body-size", "10")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 503);
        assert_eq!(r.bytes().await.unwrap().len(), 10);
        assert!(c.get(format!("{}/__close", up.url())).send().await.is_err());
        assert_eq!(up.requests(), 3);
        assert!(c
            .get(format!("http://127.0.0.1:{}", closed_port()))
            .send()
            .await
            .is_err());
    }
}
