//! The built-in upstream: a fixed response of N bytes over HTTP/1.1 keep-alive, on one thread. It is also
//! the receiver of the log-sink cases: datagrams to its UDP port (the same number; statsd) and connections
//! whose first byte is `{` (tcp-log's JSON lines) are read and thrown away.
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
        tokio::spawn(discard_datagrams(
            tokio::net::UdpSocket::bind(listener.local_addr()?).await?,
        ));
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
            let mut first = [0u8; 1];
            if matches!(stream.peek(&mut first).await, Ok(1)) && first[0] == b'{' {
                return discard(stream).await;
            }
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

/// Reads a log sink's connection until it closes, keeping nothing.
async fn discard(mut stream: tokio::net::TcpStream) {
    use tokio::io::AsyncReadExt;
    let mut buf = vec![0u8; 64 * 1024];
    while matches!(stream.read(&mut buf).await, Ok(n) if n > 0) {}
}

/// Receives datagrams (statsd's metric lines) forever, keeping nothing.
async fn discard_datagrams(socket: tokio::net::UdpSocket) {
    let mut buf = vec![0u8; 64 * 1024];
    while socket.recv(&mut buf).await.is_ok() {}
}
