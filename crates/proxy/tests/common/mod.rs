//! An in-process proxy for the integration tests: a [`ProxyServer`] on 127.0.0.1:0 serving a snapshot
//! compiled from declarative YAML, plus small request helpers.

#![allow(dead_code)]

use serde_json::Value;
use sluice_plugins::Registry;
use sluice_proxy::{parse_listen, ProxyServer, ProxySettings, SharedSnapshot, Snapshot};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

/// A running proxy; shut down (without grace) when dropped.
pub struct Proxy {
    server: Option<ProxyServer>,
    pub snapshot: SharedSnapshot,
    pub addr: SocketAddr,
    registry: Registry,
}

/// Compiles YAML into a snapshot, panicking with the errors on a bad config.
pub fn compile(yaml: &str, registry: &Registry) -> Snapshot {
    let config = sluice_model::declarative::parse(yaml, registry)
        .unwrap_or_else(|e| panic!("bad test config: {e:?}"));
    Snapshot::compile(Arc::new(config), registry).unwrap_or_else(|e| panic!("compile: {e}"))
}

impl Proxy {
    /// One worker, default settings, the built-in plugins.
    pub fn start(yaml: &str) -> Proxy {
        Proxy::with(yaml, ProxySettings::default(), Registry::builtin())
    }

    pub fn with(yaml: &str, mut settings: ProxySettings, registry: Registry) -> Proxy {
        settings.listen = parse_listen("127.0.0.1:0").unwrap();
        let snapshot: SharedSnapshot =
            Arc::new(arc_swap::ArcSwap::from_pointee(compile(yaml, &registry)));
        let server = ProxyServer::start(settings, snapshot.clone(), None).expect("proxy starts");
        let addr = server.local_addrs()[0].addr;
        Proxy {
            server: Some(server),
            snapshot,
            addr,
            registry,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Publishes a new config, as the loader does.
    pub fn load(&self, yaml: &str) {
        self.snapshot.store(Arc::new(compile(yaml, &self.registry)));
    }

    pub fn server(&self) -> &ProxyServer {
        self.server.as_ref().expect("running")
    }

    /// Stops the proxy with a grace period (on a blocking thread: shutdown joins the workers).
    pub async fn shutdown(mut self, grace: Duration) {
        let server = self.server.take().expect("running");
        tokio::task::spawn_blocking(move || server.shutdown(grace))
            .await
            .unwrap();
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        if let Some(server) = self.server.take() {
            server.shutdown(Duration::ZERO);
        }
    }
}

/// A config with one service at `url` and one route per `(name, extra route fields)`.
pub fn one_service(url: &str, routes: &[&str]) -> String {
    let mut yaml =
        format!("_format_version: \"3.0\"\nservices:\n- name: svc\n  url: {url}\n  routes:\n");
    for r in routes {
        yaml.push_str(&format!("  - {{{r}}}\n"));
    }
    yaml
}

/// GET with headers; the status, the response headers, and the JSON body (Null when not JSON).
pub async fn get<H: AsRef<[(&'static str, &'static str)]>>(
    url: impl AsRef<str>,
    headers: H,
) -> (u16, http::HeaderMap, Value) {
    let mut req = sluice_testkit::client().get(url.as_ref());
    for (k, v) in headers.as_ref() {
        req = req.header(*k, *v);
    }
    let resp = req.send().await.expect("request sent");
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let text = resp.text().await.unwrap_or_default();
    (
        status,
        headers,
        serde_json::from_str(&text).unwrap_or(Value::Null),
    )
}

/// Sends raw bytes on a new connection and reads until the server closes it (send `Connection: close`).
pub async fn raw(addr: SocketAddr, request: &[u8]) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    stream.write_all(request).await.expect("write");
    let mut out = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut out)).await;
    String::from_utf8_lossy(&out).into_owned()
}
