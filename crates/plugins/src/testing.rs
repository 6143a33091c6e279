//! Building plugin chains and request contexts outside the proxy: for unit tests and benchmarks.

use crate::compiled::CompiledPlugins;
use crate::credentials::Credentials;
use crate::ctx::RequestCtx;
use crate::registry::Registry;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::{Instant, SystemTime};

/// Parses a declarative config (YAML or JSON) with the builtin plugins and compiles its plugins.
/// Panics with the errors when the config is invalid: for tests and benchmarks only.
pub fn compile(yaml: &str) -> (sluice_model::Config, CompiledPlugins) {
    let registry = Registry::builtin();
    let config = sluice_model::declarative::parse(yaml, &registry)
        .unwrap_or_else(|e| panic!("invalid test config: {e:?}"));
    let compiled = registry
        .compile(&config)
        .unwrap_or_else(|e| panic!("plugins failed to build: {e:?}"));
    (config, compiled)
}

impl<'s> RequestCtx<'s> {
    /// A context for `request` from 127.0.0.1 over plain HTTP, before routing and authentication, as the proxy
    /// would build it; tests set `route`, `scheme`, `body` etc. as needed.
    pub fn detached(request: http::request::Parts, credentials: &'s Credentials) -> RequestCtx<'s> {
        let client_addr = SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 40000);
        RequestCtx {
            tls: None,
            server_port: 8000,
            request,
            body: None,
            client_addr,
            client_ip: client_addr.ip(),
            peer_trusted: false,
            scheme: "http",
            request_id: "00000000000000000000000000000000",
            route: None,
            service: None,
            captures: None,
            consumer: None,
            credential: None,
            anonymous: false,
            credentials,
            body_limit: None,
            response_headers: Default::default(),
            started: Instant::now(),
            started_wall: SystemTime::now(),
            plugin_data: http::Extensions::new(),
        }
    }
}

/// A request head: `method`, `uri` (path and query) and headers.
pub fn request(method: &str, uri: &str, headers: &[(&str, &str)]) -> http::request::Parts {
    let mut builder = http::Request::builder().method(method).uri(uri);
    for (name, value) in headers {
        builder = builder.header(*name, *value);
    }
    builder
        .body(())
        .unwrap_or_else(|e| panic!("bad test request: {e}"))
        .into_parts()
        .0
}

/// Drives a future to completion on a fresh single-threaded runtime (plugin phases outside the proxy).
pub fn block_on<F: std::future::Future>(future: F) -> F::Output {
    let waker = std::task::Waker::noop();
    let mut cx = std::task::Context::from_waker(waker);
    let mut future = std::pin::pin!(future);
    loop {
        if let std::task::Poll::Ready(out) = future.as_mut().poll(&mut cx) {
            return out;
        }
        std::thread::yield_now();
    }
}
