//! The admin and status HTTP servers: accept loop, dispatch by path, common headers.

use crate::reply::{self, Reply};
use crate::{config, entities, info, Control};
use bytes::Bytes;
use http::{HeaderValue, Method, Request};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use std::future::Future;
use std::sync::Arc;
use std::time::Instant;

/// Largest accepted admin request body (a 10k-route config is ~5 MB).
const MAX_BODY: usize = 64 << 20;

/// Serves the Admin API until `shutdown` completes.
pub async fn serve_admin(
    listener: tokio::net::TcpListener,
    control: Arc<dyn Control>,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    serve(listener, control, shutdown, false).await
}

/// Serves the status listener (`/status`, `/status/ready`) until `shutdown` completes.
pub async fn serve_status(
    listener: tokio::net::TcpListener,
    control: Arc<dyn Control>,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    serve(listener, control, shutdown, true).await
}

async fn serve(
    listener: tokio::net::TcpListener,
    control: Arc<dyn Control>,
    shutdown: impl Future<Output = ()>,
    status_only: bool,
) -> std::io::Result<()> {
    tokio::pin!(shutdown);
    loop {
        let (stream, _) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(x) => x,
                Err(e) => { tracing::warn!(error = %e, "admin accept failed"); continue; }
            },
            () = &mut shutdown => return Ok(()),
        };
        let control = control.clone();
        tokio::spawn(async move {
            let service = service_fn(move |req| {
                let control = control.clone();
                async move {
                    Ok::<_, std::convert::Infallible>(
                        respond(req, control.as_ref(), status_only).await,
                    )
                }
            });
            let _ = auto::Builder::new(TokioExecutor::new())
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

async fn respond(req: Request<Incoming>, control: &dyn Control, status_only: bool) -> Reply {
    let started = Instant::now();
    let mut resp = route(req, control, status_only).await;
    let h = resp.headers_mut();
    if let Ok(v) = HeaderValue::from_str(&started.elapsed().as_millis().to_string()) {
        h.insert("x-kong-admin-latency", v);
    }
    h.insert("access-control-allow-origin", HeaderValue::from_static("*"));
    h.insert(
        http::header::SERVER,
        HeaderValue::from_static(concat!("sluice/", env!("CARGO_PKG_VERSION"))),
    );
    resp
}

async fn route(req: Request<Incoming>, control: &dyn Control, status_only: bool) -> Reply {
    let (parts, body) = req.into_parts();
    let path = parts.uri.path().trim_end_matches('/').to_string();
    let query = parts.uri.query().map(String::from);
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let method = parts.method.clone();
    let get = method == Method::GET || method == Method::HEAD;
    match (segments.as_slice(), status_only) {
        (["status"], _) if get => info::status(control),
        (["status", "ready"], true) if get => info::ready(control),
        (_, true) => reply::not_found(),
        ([], false) if get => info::root(control),
        (["config"], false) if get => config::get(control),
        (["config"], false) if method == Method::POST => {
            let content_type = parts
                .headers
                .get(http::header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_string();
            let body = match read_body(body).await {
                Ok(b) => b,
                Err(r) => return r,
            };
            config::post(control, query.as_deref(), &content_type, &body).await
        }
        ([] | ["config"] | ["status"], false) => reply::method_not_allowed(),
        _ => {
            let config = control.config();
            entities::handle(&method, &segments, query.as_deref(), &path, &config)
                .unwrap_or_else(reply::not_found)
        }
    }
}

#[allow(clippy::result_large_err)] // the error is the finished response
async fn read_body(body: Incoming) -> Result<Bytes, Reply> {
    let limited = http_body_util::Limited::new(body, MAX_BODY);
    match limited.collect().await {
        Ok(b) => Ok(b.to_bytes()),
        Err(_) => Err(reply::message(
            http::StatusCode::PAYLOAD_TOO_LARGE,
            "request body too large",
        )),
    }
}
