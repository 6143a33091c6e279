//! The built-in upstream: a fixed response of N bytes over HTTP/1.1 keep-alive, on one thread. It is also
//! the receiver of the log-sink cases: datagrams to its UDP port (the same number; statsd) and connections
//! whose first byte is `{` (tcp-log's JSON lines) are read and thrown away.
//!
//! A request upgrading to `websocket` gets a tunnel that echoes every message ([`ws`], the ws-echo case),
//! and a connection that opens with the HTTP/2 preface is answered as a gRPC server ([`grpc`], the
//! grpc-unary case).
//!
//! It is as cheap as an HTTP server gets so that the proxy, not the upstream, is the bottleneck;
//! `run` starts it as a separate `sluice-perf upstream` process pinned to the load CPUs.

pub mod grpc;
#[cfg(test)]
pub(crate) mod tests;
pub mod ws;

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
            let mut first = [0u8; 4];
            let seen = stream.peek(&mut first).await.unwrap_or(0);
            if seen >= 1 && first[0] == b'{' {
                return discard(stream).await;
            }
            if first[..seen] == *grpc::PREFACE {
                return grpc::serve(stream).await;
            }
            let service = service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                let resp = respond(req, &body);
                async move { Ok::<_, Infallible>(resp) }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .with_upgrades()
                .await;
        });
    }
}

/// The answer to one HTTP/1.1 request: a WebSocket tunnel, the gRPC call count, or `body` (typed
/// `text/plain` under [`CACHEABLE`]).
fn respond(
    req: hyper::Request<hyper::body::Incoming>,
    body: &Bytes,
) -> hyper::Response<Full<Bytes>> {
    if ws::is_upgrade(&req) {
        return ws::accept(req);
    }
    let path = req.uri().path();
    if path == grpc::CALLS_PATH {
        return hyper::Response::new(Full::new(Bytes::from(grpc::calls().to_string())));
    }
    let mut resp = hyper::Response::new(Full::new(body.clone()));
    if path.starts_with(CACHEABLE) {
        resp.headers_mut().insert(
            hyper::header::CONTENT_TYPE,
            hyper::header::HeaderValue::from_static("text/plain"),
        );
    }
    resp
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
