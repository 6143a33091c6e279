//! The built-in upstream: a fixed response of N bytes over HTTP/1.1 keep-alive, on one thread.
//!
//! It is as cheap as an HTTP server gets so that the proxy, not the upstream, is the bottleneck;
//! `run` starts it as a separate `sluice-perf upstream` process pinned to the load CPUs.

#[cfg(test)]
mod tests;

use bytes::Bytes;
use http_body_util::Full;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use std::convert::Infallible;
use std::net::SocketAddr;

/// Requests whose path starts with this get `Content-Type: text/plain` (what proxy-cache needs to store a
/// response); others get no `Content-Type`, as before, so the other cases' responses are unchanged.
pub const CACHEABLE: &str = "/cacheable";

/// Serves on `addr` until the process ends (a current-thread runtime: one core).
pub fn serve(addr: SocketAddr, body_size: usize) -> anyhow::Result<()> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind(addr).await?;
        crate::progress(format!(
            "upstream listening on {}, {body_size}-byte responses",
            listener.local_addr()?
        ));
        serve_on(listener, body_size).await
    })
}

/// Accepts connections on `listener` forever, answering every request with `body_size` bytes.
pub async fn serve_on(listener: tokio::net::TcpListener, body_size: usize) -> anyhow::Result<()> {
    let body = Bytes::from(vec![b'x'; body_size]);
    loop {
        let (stream, _) = listener.accept().await?;
        let _ = stream.set_nodelay(true);
        let body = body.clone();
        tokio::spawn(async move {
            let service = service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                let mut resp = hyper::Response::new(Full::new(body.clone()));
                if req.uri().path().starts_with(CACHEABLE) {
                    resp.headers_mut().insert(
                        hyper::header::CONTENT_TYPE,
                        hyper::header::HeaderValue::from_static("text/plain"),
                    );
                }
                async move { Ok::<_, Infallible>(resp) }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}
