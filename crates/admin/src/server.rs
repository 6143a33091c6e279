//! The admin and status HTTP servers: accept loop, HTTP/1 and h2c via hyper-util's auto builder, and the
//! headers every response carries (`X-Kong-Admin-Latency`, CORS, `Server`).
//!
//! Each listener bounds what a client can hold: a request head must arrive within [`ServeLimits`]'
//! `header_timeout` (so does the next head on a keep-alive connection), a client must take response bytes
//! within its `send_timeout` (else the connection closes), a TLS handshake within 10 s, at
//! most one `POST /config` body is read and parsed at a time per listener, and at most
//! [`crate::WRITE_PERMITS`] entity writes run at a time per listener, the others waiting their turn
//! ([`crate::handlers::Gate`]).

use crate::deadline::ClientDeadlines;
use crate::handlers::dispatch;
use crate::handlers::Gate;
use crate::reply::Reply;
use crate::router::Listener;
use crate::Control;
use http::{HeaderMap, HeaderValue};
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_rustls::TlsAcceptor;

/// How long an admin client may take to finish a TLS handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// What bounds a connection of the admin or status listener, with nginx's meaning.
#[derive(Debug, Clone, Copy)]
pub struct ServeLimits {
    /// How long a client may take to send a request head, counted from the accept or from the end of the
    /// previous response (so it also closes idle keep-alive connections): nginx's `client_header_timeout`.
    pub header_timeout: Duration,
    /// The longest wait between two reads of a request body: nginx's `client_body_timeout` (408).
    pub body_timeout: Duration,
    /// The longest wait for a client to take response bytes: nginx's `send_timeout` (the connection
    /// closes).
    pub send_timeout: Duration,
}

impl Default for ServeLimits {
    /// nginx's defaults (60 s), which Kong keeps.
    fn default() -> ServeLimits {
        ServeLimits {
            header_timeout: Duration::from_secs(60),
            body_timeout: Duration::from_secs(60),
            send_timeout: Duration::from_secs(60),
        }
    }
}

/// Serves the Admin API on `listener` (over TLS when `tls` is given: `admin_listen ... ssl`) until
/// `shutdown` completes. Connections already accepted finish on their own tasks.
pub async fn serve_admin(
    listener: tokio::net::TcpListener,
    tls: Option<TlsAcceptor>,
    control: Arc<dyn Control>,
    limits: ServeLimits,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    serve(listener, tls, control, limits, shutdown, Listener::Admin).await
}

/// Serves the status listener (`/status`, `/status/ready`, `/metrics`) until `shutdown` completes.
pub async fn serve_status(
    listener: tokio::net::TcpListener,
    tls: Option<TlsAcceptor>,
    control: Arc<dyn Control>,
    limits: ServeLimits,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    serve(listener, tls, control, limits, shutdown, Listener::Status).await
}

/// The connection builder: HTTP/1.1 heads bounded by `limits`, h2c beside it.
fn builder(limits: ServeLimits) -> auto::Builder<TokioExecutor> {
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout);
    builder.http2().timer(TokioTimer::new());
    builder
}

async fn serve(
    listener: tokio::net::TcpListener,
    tls: Option<TlsAcceptor>,
    control: Arc<dyn Control>,
    limits: ServeLimits,
    shutdown: impl Future<Output = ()>,
    kind: Listener,
) -> std::io::Result<()> {
    tokio::pin!(shutdown);
    let builder = Arc::new(builder(limits));
    let gate = Arc::new(Gate::new(limits.body_timeout));
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    // Out of file descriptors and the like: keep serving once it passes.
                    tracing::warn!(error = %e, "admin accept failed");
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => return Ok(()),
        };
        let (control, tls, builder) = (control.clone(), tls.clone(), builder.clone());
        let gate = gate.clone();
        tokio::spawn(async move {
            let service = service_fn(move |req: http::Request<hyper::body::Incoming>| {
                let (control, gate) = (control.clone(), gate.clone());
                async move {
                    let started = Instant::now();
                    let origin = req.headers().get(http::header::ORIGIN).cloned();
                    let mut resp = dispatch(kind, req, control.as_ref(), &gate).await;
                    common_headers(&mut resp, started, origin);
                    Ok::<Reply, std::convert::Infallible>(resp)
                }
            });
            let served = match tls {
                None => {
                    let stream =
                        ClientDeadlines::new(stream, limits.header_timeout, limits.send_timeout);
                    builder
                        .serve_connection(TokioIo::new(stream), service)
                        .await
                }
                Some(acceptor) => {
                    let handshake = acceptor.accept(stream);
                    match tokio::time::timeout(HANDSHAKE_TIMEOUT, handshake).await {
                        Ok(Ok(stream)) => {
                            let stream = ClientDeadlines::new(
                                stream,
                                limits.header_timeout,
                                limits.send_timeout,
                            );
                            builder
                                .serve_connection(TokioIo::new(stream), service)
                                .await
                        }
                        Ok(Err(e)) => Err(e.into()),
                        Err(_) => return,
                    }
                }
            };
            if let Err(e) = served {
                tracing::debug!(error = %e, "admin connection ended with an error");
            }
        });
    }
}

/// Kong's headers on every admin response: latency in ms, CORS (the request's origin or `*`, with
/// credentials), and our `Server`.
fn common_headers(resp: &mut Reply, started: Instant, origin: Option<HeaderValue>) {
    let h: &mut HeaderMap = resp.headers_mut();
    h.insert(
        "x-kong-admin-latency",
        HeaderValue::from(started.elapsed().as_millis() as u64),
    );
    h.insert(
        http::header::ACCESS_CONTROL_ALLOW_ORIGIN,
        origin.unwrap_or(HeaderValue::from_static("*")),
    );
    h.insert(
        http::header::ACCESS_CONTROL_ALLOW_CREDENTIALS,
        HeaderValue::from_static("true"),
    );
    h.insert(
        http::header::SERVER,
        HeaderValue::from_static(concat!("sluice/", env!("CARGO_PKG_VERSION"))),
    );
}
