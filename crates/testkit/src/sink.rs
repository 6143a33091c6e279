//! [`LogSink`]: an HTTP (or HTTPS, self-signed) server that records the bodies POSTed to it, as a log endpoint
//! for `http-log` tests and benchmarks. It answers 200 (or the status set with [`LogSink::set_status`]).

use crate::echo::Background;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo};
use std::sync::atomic::{AtomicU16, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// One request the sink received.
#[derive(Debug, Clone)]
pub struct SinkRequest {
    pub method: String,
    pub path: String,
    pub headers: http::HeaderMap,
    pub body: Bytes,
}

impl SinkRequest {
    /// The body as JSON (`null` when it is not JSON).
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or(serde_json::Value::Null)
    }
}

#[derive(Default)]
struct State {
    requests: Mutex<Vec<SinkRequest>>,
    count: AtomicU64,
    status: AtomicU16,
    /// Milliseconds to wait before answering.
    delay_ms: AtomicU64,
    /// Keep only the count, not the requests (for load runs).
    count_only: bool,
}

/// A log endpoint on 127.0.0.1 that records what it receives; stops when dropped.
pub struct LogSink {
    server: Background,
    state: Arc<State>,
    tls: bool,
}

impl LogSink {
    /// A sink on a free port.
    pub fn start() -> LogSink {
        LogSink::on_port(0, false)
    }

    /// A sink on `port` (e.g. a port an earlier sink used, to bring an endpoint "back").
    pub fn start_on(port: u16) -> LogSink {
        LogSink::on_port(port, false)
    }

    /// A sink that only counts requests (for benchmarks).
    pub fn counting() -> LogSink {
        LogSink::on_port(0, true)
    }

    /// A sink over TLS with a fresh self-signed certificate for `localhost` (no client trusts it).
    pub fn start_tls() -> LogSink {
        let cert = crate::tls::self_signed(&["localhost"]);
        LogSink::serve(0, false, Some(crate::tls::acceptor(&cert, None)))
    }

    fn on_port(port: u16, count_only: bool) -> LogSink {
        LogSink::serve(port, count_only, None)
    }

    fn serve(port: u16, count_only: bool, tls: Option<tokio_rustls::TlsAcceptor>) -> LogSink {
        let state = Arc::new(State {
            status: AtomicU16::new(200),
            count_only,
            ..State::default()
        });
        let shared = state.clone();
        let tls_on = tls.is_some();
        let server = Background::on_port(port, move |listener| async move {
            while let Ok((stream, _)) = listener.accept().await {
                let state = shared.clone();
                let tls = tls.clone();
                tokio::task::spawn_local(async move {
                    let service = service_fn(move |req| record(req, state.clone()));
                    let builder =
                        hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
                    let _ = match tls {
                        Some(acceptor) => match acceptor.accept(stream).await {
                            Ok(stream) => {
                                builder
                                    .serve_connection(TokioIo::new(stream), service)
                                    .await
                            }
                            Err(_) => return,
                        },
                        None => {
                            builder
                                .serve_connection(TokioIo::new(stream), service)
                                .await
                        }
                    };
                });
            }
        });
        LogSink {
            server,
            state,
            tls: tls_on,
        }
    }

    pub fn port(&self) -> u16 {
        self.server.addr.port()
    }

    /// `http://127.0.0.1:<port>` + `path` (`https://localhost:<port>` for a TLS sink).
    pub fn url(&self, path: &str) -> String {
        match self.tls {
            true => format!("https://localhost:{}{path}", self.server.addr.port()),
            false => format!("http://{}{path}", self.server.addr),
        }
    }

    /// The status of the next answers (e.g. 503 to make deliveries fail).
    pub fn set_status(&self, status: u16) {
        self.state.status.store(status, Ordering::SeqCst);
    }

    /// Answers after `delay` (a slow log endpoint); a request is recorded only once answered.
    pub fn set_delay(&self, delay: std::time::Duration) {
        self.state
            .delay_ms
            .store(delay.as_millis() as u64, Ordering::SeqCst);
    }

    /// Requests received so far.
    pub fn count(&self) -> u64 {
        self.state.count.load(Ordering::SeqCst)
    }

    /// Every request received so far (empty for a counting sink).
    pub fn requests(&self) -> Vec<SinkRequest> {
        self.state
            .requests
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Waits up to `timeout` until at least `n` requests arrived; returns the requests.
    pub fn wait_for(&self, n: usize, timeout: std::time::Duration) -> Vec<SinkRequest> {
        let deadline = std::time::Instant::now() + timeout;
        while (self.count() as usize) < n && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        self.requests()
    }
}

async fn record(
    req: Request<hyper::body::Incoming>,
    state: Arc<State>,
) -> Result<Response<Full<Bytes>>, hyper::Error> {
    let (parts, body) = req.into_parts();
    let body = body.collect().await?.to_bytes();
    let delay = state.delay_ms.load(Ordering::SeqCst);
    if delay > 0 {
        tokio::time::sleep(std::time::Duration::from_millis(delay)).await;
    }
    if !state.count_only {
        let request = SinkRequest {
            method: parts.method.to_string(),
            path: parts.uri.to_string(),
            headers: parts.headers,
            body,
        };
        state
            .requests
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(request);
    }
    state.count.fetch_add(1, Ordering::SeqCst);
    let status = state.status.load(Ordering::SeqCst);
    let mut resp = Response::new(Full::new(Bytes::from_static(b"{}")));
    *resp.status_mut() = http::StatusCode::from_u16(status).unwrap_or(http::StatusCode::OK);
    Ok(resp)
}
