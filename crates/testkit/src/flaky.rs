//! An upstream whose behaviour a test switches at run time, to fail in each way health checks must see:
//! answering normally (as the echo upstream), answering a fixed status, resetting connections, or sending
//! its response headers late.

use crate::echo::{respond, Background, Close};
use bytes::Bytes;
use http_body_util::Full;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How a [`FlakyUpstream`] answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Like [`crate::EchoUpstream`].
    Healthy,
    /// Every request gets this status (and the echo body).
    Status(u16),
    /// New connections are reset at once; requests on open ones get the connection closed unanswered.
    Reset,
    /// Response headers come after this delay.
    SlowHeaders(Duration),
}

/// See the module doc. Requests to `/probe` (the path tests give active checks) are counted apart.
pub struct FlakyUpstream {
    server: Background,
    mode: Arc<Mutex<Mode>>,
    requests: Arc<AtomicU64>,
    probes: Arc<AtomicU64>,
}

impl FlakyUpstream {
    /// Starts healthy; `name` is the `upstream` field of its echo bodies.
    pub fn start(name: &str) -> FlakyUpstream {
        let mode = Arc::new(Mutex::new(Mode::Healthy));
        let (requests, probes) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
        let name: Arc<str> = name.into();
        let (m, r, p) = (mode.clone(), requests.clone(), probes.clone());
        let server = Background::start(move |listener| async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                if current(&m) == Mode::Reset {
                    let _ = socket2::SockRef::from(&stream).set_linger(Some(Duration::ZERO));
                    drop(stream);
                    continue;
                }
                let (m, r, p, name) = (m.clone(), r.clone(), p.clone(), name.clone());
                let service = service_fn(move |req: Request<hyper::body::Incoming>| {
                    let counter = if req.uri().path() == "/probe" { &p } else { &r };
                    counter.fetch_add(1, Ordering::SeqCst);
                    answer(req, current(&m), name.clone())
                });
                tokio::task::spawn_local(async move {
                    let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        FlakyUpstream {
            server,
            mode,
            requests,
            probes,
        }
    }

    /// Switches how requests from now on are answered.
    pub fn set(&self, mode: Mode) {
        *self.mode.lock().unwrap_or_else(|e| e.into_inner()) = mode;
    }

    pub fn port(&self) -> u16 {
        self.server.addr.port()
    }

    /// Requests received, probes (`/probe`) excluded.
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::SeqCst)
    }

    /// Requests to `/probe` received.
    pub fn probes(&self) -> u64 {
        self.probes.load(Ordering::SeqCst)
    }
}

fn current(mode: &Mutex<Mode>) -> Mode {
    *mode.lock().unwrap_or_else(|e| e.into_inner())
}

async fn answer(
    req: Request<hyper::body::Incoming>,
    mode: Mode,
    name: Arc<str>,
) -> Result<Response<Full<Bytes>>, Close> {
    match mode {
        Mode::Healthy => respond(req, name).await,
        Mode::Reset => Err(Close),
        Mode::SlowHeaders(delay) => {
            tokio::time::sleep(delay).await;
            respond(req, name).await
        }
        Mode::Status(status) => {
            let mut resp = respond(req, name).await?;
            *resp.status_mut() = http::StatusCode::from_u16(status).unwrap_or_default();
            Ok(resp)
        }
    }
}
