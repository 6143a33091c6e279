//! The upstream's gRPC answer (the grpc-unary case): a connection that opens with the HTTP/2 preface
//! (h2c, prior knowledge) is served by hyper's HTTP/2 server, which reads each call's request and
//! answers a fixed protobuf message followed by `grpc-status: 0` trailers. Calls are counted so the
//! load can check that every successful answer came from here; `GET` [`CALLS_PATH`] over HTTP/1.1 reads
//! the count.

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::{Body, Frame, Incoming};
use hyper::header::{HeaderMap, HeaderValue, CONTENT_TYPE};
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo};
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};

/// The HTTP/2 connection preface's first bytes.
pub const PREFACE: &[u8] = b"PRI ";

/// Where the built-in upstream tells, over HTTP/1.1, how many gRPC calls it has answered.
pub const CALLS_PATH: &str = "/__grpc_calls";

/// The reply message: protobuf field 1 (string) = "ok".
pub const REPLY: &[u8] = b"\x0a\x02ok";

/// The request message the load sends: protobuf field 1 (string) = "ping".
pub const REQUEST: &[u8] = b"\x0a\x04ping";

/// Calls answered since the process started.
static CALLS: AtomicU64 = AtomicU64::new(0);

/// The number of gRPC calls answered so far.
pub fn calls() -> u64 {
    CALLS.load(Ordering::Relaxed)
}

/// A gRPC length-prefixed message: uncompressed flag 0, big-endian length, the message.
pub fn frame(message: &[u8]) -> Vec<u8> {
    let len = u32::try_from(message.len()).unwrap_or(u32::MAX);
    let mut out = Vec::with_capacity(5 + message.len());
    out.push(0);
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(message);
    out
}

/// Serves one h2c connection until it ends.
pub async fn serve(stream: tokio::net::TcpStream) {
    let service = service_fn(|req: Request<Incoming>| async move {
        // The call's message is read whole before the answer, as a unary server does.
        let _ = req.into_body().collect().await;
        CALLS.fetch_add(1, Ordering::Relaxed);
        let mut resp = Response::new(Reply::new());
        resp.headers_mut()
            .insert(CONTENT_TYPE, HeaderValue::from_static("application/grpc"));
        Ok::<_, Infallible>(resp)
    });
    let _ = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
        .serve_connection(TokioIo::new(stream), service)
        .await;
}

/// A unary reply's body: one data frame with [`REPLY`], then `grpc-status: 0` trailers.
pub struct Reply {
    data: Option<Bytes>,
    trailers: Option<HeaderMap>,
}

impl Reply {
    fn new() -> Self {
        let mut trailers = HeaderMap::new();
        trailers.insert("grpc-status", HeaderValue::from_static("0"));
        Reply {
            data: Some(Bytes::from(frame(REPLY))),
            trailers: Some(trailers),
        }
    }
}

impl Body for Reply {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let frame = match self.data.take() {
            Some(data) => Some(Frame::data(data)),
            None => self.trailers.take().map(Frame::trailers),
        };
        Poll::Ready(frame.map(Ok))
    }

    fn is_end_stream(&self) -> bool {
        self.data.is_none() && self.trailers.is_none()
    }
}
