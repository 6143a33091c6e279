//! A gRPC upstream (tonic's server side over hyper's HTTP/2, h2c) and a tonic client for the gRPC
//! proxying tests. No `.proto` and no `protoc`: the one message is a hand-written prost message and the
//! service `sluice.test.Echo` is dispatched by path, as tonic's generated code would do it.
//!
//! Methods, steered by the message's `text`:
//! - `Unary`: echoes the message; `sleep:<ms>` answers after that long, `fail` answers NOT_FOUND `nope`;
//! - `ServerStream`: `<n>` sends n messages (texts `0`..), each with the request's payload; `slow:<n>`
//!   sends one every 200 ms;
//! - `ClientStream`: answers `count:<messages> bytes:<payload bytes>`;
//! - `Bidi`: echoes each message as it comes.
//!
//! `GrpcUpstream::tls` serves grpcs (TLS, ALPN `h2` required). The server enforces the call's `grpc-timeout` (DEADLINE_EXCEEDED past it) and echoes the header it
//! received as the response header `x-grpc-timeout`, so a test sees that the deadline passed the gateway.
//! It also serves the standard health service ([`health`]), `SERVING` until a test says otherwise.

use crate::echo::Background;
use crate::tls::{acceptor, insecure_client, TestCert};
use futures_util::{Stream, StreamExt};
use http::{HeaderValue, Request, Response, Uri};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_rustls::rustls::pki_types::ServerName;
use tokio_rustls::rustls::ServerConfig;
use tokio_rustls::{TlsAcceptor, TlsConnector};
use tonic::server::{
    ClientStreamingService, ServerStreamingService, StreamingService, UnaryService,
};
pub use tonic::{Code, Request as GrpcRequest};
use tonic::{Status, Streaming};

mod health;
use health::Health;

/// The test service's one message.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Msg {
    #[prost(string, tag = "1")]
    pub text: String,
    #[prost(bytes = "vec", tag = "2")]
    pub payload: Vec<u8>,
}

impl Msg {
    pub fn text(text: &str) -> Msg {
        Msg {
            text: text.to_string(),
            payload: Vec::new(),
        }
    }
}

type Codec = tonic_prost::ProstCodec<Msg, Msg>;
type Boxed<T> = Pin<Box<dyn Future<Output = Result<T, Status>> + Send>>;
type MsgStream = Pin<Box<dyn Stream<Item = Result<Msg, Status>> + Send>>;

/// The gRPC upstream (h2c); stops when dropped, closing its connections.
pub struct GrpcUpstream {
    server: Background,
    connections: Arc<AtomicU64>,
    served: Served,
}

/// What the server's connections share: its health, and the count of calls other than health checks.
#[derive(Clone)]
struct Served {
    health: Health,
    calls: Arc<AtomicU64>,
}

impl GrpcUpstream {
    pub fn start() -> GrpcUpstream {
        GrpcUpstream::on_port(0)
    }

    /// On 127.0.0.1:`port` (a restarted upstream takes its old port back).
    pub fn on_port(port: u16) -> GrpcUpstream {
        GrpcUpstream::serve(port, None)
    }

    /// Over TLS with `cert`, serving only connections that chose `h2` by ALPN (grpcs).
    pub fn tls(cert: &TestCert) -> GrpcUpstream {
        let plain = acceptor(cert, None);
        let mut config = ServerConfig::clone(plain.config());
        config.alpn_protocols = vec![b"h2".to_vec()];
        GrpcUpstream::serve(0, Some(TlsAcceptor::from(Arc::new(config))))
    }

    fn serve(port: u16, tls: Option<TlsAcceptor>) -> GrpcUpstream {
        let connections = Arc::new(AtomicU64::new(0));
        let counter = connections.clone();
        let served = Served {
            health: Health::new(),
            calls: Arc::default(),
        };
        let shared = served.clone();
        let server = Background::on_port(port, |listener| async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                counter.fetch_add(1, Ordering::SeqCst);
                let (tls, served) = (tls.clone(), shared.clone());
                tokio::task::spawn_local(async move {
                    let Some(tls) = tls else {
                        return serve_h2(stream, served).await;
                    };
                    let Ok(stream) = tls.accept(stream).await else {
                        return;
                    };
                    if stream.get_ref().1.alpn_protocol() == Some(b"h2") {
                        serve_h2(stream, served).await;
                    }
                });
            }
        });
        GrpcUpstream {
            server,
            connections,
            served,
        }
    }

    pub fn port(&self) -> u16 {
        self.server.addr.port()
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> u64 {
        self.connections.load(Ordering::SeqCst)
    }

    /// What the health service answers from now on: `SERVING` (the start) or `NOT_SERVING`.
    pub fn set_serving(&self, serving: bool) {
        self.served.health.set_serving(serving);
    }

    /// Calls of the health service answered so far.
    pub fn health_checks(&self) -> u64 {
        self.served.health.checks()
    }

    /// Calls other than health checks received so far.
    pub fn calls(&self) -> u64 {
        self.served.calls.load(Ordering::SeqCst)
    }
}

async fn serve_h2<S: AsyncRead + AsyncWrite + Unpin + 'static>(stream: S, served: Served) {
    let service = hyper::service::service_fn(move |req| handle(req, served.clone()));
    let _ = hyper::server::conn::http2::Builder::new(LocalExec)
        .serve_connection(TokioIo::new(stream), service)
        .await;
}

/// Runs hyper's connection tasks on the server's local set.
#[derive(Clone, Copy)]
struct LocalExec;

impl<F: Future + 'static> hyper::rt::Executor<F> for LocalExec {
    fn execute(&self, fut: F) {
        tokio::task::spawn_local(fut);
    }
}

async fn handle(
    req: Request<Incoming>,
    served: Served,
) -> Result<Response<tonic::body::Body>, Infallible> {
    let health = served.health;
    if req.uri().path() != health::CHECK {
        served.calls.fetch_add(1, Ordering::SeqCst);
    }
    let timeout = req.headers().get("grpc-timeout").cloned();
    let deadline = timeout.as_ref().and_then(parse_timeout);
    let path = req.uri().path().to_string();
    let mut grpc = tonic::server::Grpc::new(Codec::default());
    let call = async move {
        match path.as_str() {
            "/sluice.test.Echo/Unary" => grpc.unary(Echo, req).await,
            "/sluice.test.Echo/ServerStream" => grpc.server_streaming(Echo, req).await,
            "/sluice.test.Echo/ClientStream" => grpc.client_streaming(Echo, req).await,
            "/sluice.test.Echo/Bidi" => grpc.streaming(Echo, req).await,
            health::CHECK => {
                let mut grpc = tonic::server::Grpc::new(health::Codec::default());
                grpc.unary(health, req).await
            }
            _ => Status::unimplemented(path).into_http(),
        }
    };
    let mut resp = match deadline {
        Some(d) => tokio::time::timeout(d, call)
            .await
            .unwrap_or_else(|_| Status::deadline_exceeded("deadline passed").into_http()),
        None => call.await,
    };
    if let Some(t) = timeout {
        resp.headers_mut().insert("x-grpc-timeout", t);
    }
    Ok(resp)
}

/// `grpc-timeout`: digits and a unit (H, M, S, m, u, n).
fn parse_timeout(v: &HeaderValue) -> Option<Duration> {
    let s = v.to_str().ok()?;
    let (n, unit) = s.split_at(s.len().checked_sub(1)?);
    let n: u64 = n.parse().ok()?;
    Some(match unit {
        "H" => Duration::from_secs(n * 3600),
        "M" => Duration::from_secs(n * 60),
        "S" => Duration::from_secs(n),
        "m" => Duration::from_millis(n),
        "u" => Duration::from_micros(n),
        "n" => Duration::from_nanos(n),
        _ => return None,
    })
}

#[derive(Clone, Copy)]
struct Echo;

impl UnaryService<Msg> for Echo {
    type Response = Msg;
    type Future = Boxed<tonic::Response<Msg>>;
    fn call(&mut self, request: tonic::Request<Msg>) -> Self::Future {
        Box::pin(async move {
            let msg = request.into_inner();
            if let Some(ms) = msg.text.strip_prefix("sleep:") {
                let ms = ms.parse().unwrap_or(0);
                tokio::time::sleep(Duration::from_millis(ms)).await;
            }
            if msg.text == "fail" {
                return Err(Status::not_found("nope"));
            }
            Ok(tonic::Response::new(msg))
        })
    }
}

impl ServerStreamingService<Msg> for Echo {
    type Response = Msg;
    type ResponseStream = MsgStream;
    type Future = Boxed<tonic::Response<MsgStream>>;
    fn call(&mut self, request: tonic::Request<Msg>) -> Self::Future {
        let msg = request.into_inner();
        let (slow, n) = match msg.text.strip_prefix("slow:") {
            Some(n) => (true, n),
            None => (false, msg.text.as_str()),
        };
        let n: usize = n.parse().unwrap_or(0);
        let payload = msg.payload;
        let stream = futures_util::stream::iter(0..n).then(move |i| {
            let payload = payload.clone();
            async move {
                if slow && i > 0 {
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
                Ok(Msg {
                    text: i.to_string(),
                    payload,
                })
            }
        });
        Box::pin(async move { Ok(tonic::Response::new(Box::pin(stream) as MsgStream)) })
    }
}

impl ClientStreamingService<Msg> for Echo {
    type Response = Msg;
    type Future = Boxed<tonic::Response<Msg>>;
    fn call(&mut self, request: tonic::Request<Streaming<Msg>>) -> Self::Future {
        Box::pin(async move {
            let mut stream = request.into_inner();
            let (mut count, mut bytes) = (0, 0);
            while let Some(msg) = stream.message().await? {
                count += 1;
                bytes += msg.payload.len();
            }
            Ok(tonic::Response::new(Msg::text(&format!(
                "count:{count} bytes:{bytes}"
            ))))
        })
    }
}

impl StreamingService<Msg> for Echo {
    type Response = Msg;
    type ResponseStream = MsgStream;
    type Future = Boxed<tonic::Response<MsgStream>>;
    fn call(&mut self, request: tonic::Request<Streaming<Msg>>) -> Self::Future {
        let echoed = request.into_inner().map(|m| m);
        Box::pin(async move { Ok(tonic::Response::new(Box::pin(echoed) as MsgStream)) })
    }
}

/// A tonic client of `sluice.test.Echo` over one h2c connection (prior knowledge) to `addr`.
pub struct GrpcClient {
    grpc: tonic::client::Grpc<H2>,
}

impl GrpcClient {
    pub async fn connect(addr: SocketAddr) -> Result<GrpcClient, String> {
        GrpcClient::connect_as(addr, &addr.to_string()).await
    }

    /// A client whose calls name `authority` (`:authority`, which routes match as the host).
    pub async fn connect_as(addr: SocketAddr, authority: &str) -> Result<GrpcClient, String> {
        let tcp = tokio::net::TcpStream::connect(addr)
            .await
            .map_err(|e| e.to_string())?;
        GrpcClient::over(tcp, "http", authority).await
    }

    /// [`GrpcClient::connect_as`] over TLS (any certificate accepted, SNI and ALPN `h2`).
    pub async fn connect_tls(addr: SocketAddr, authority: &str) -> Result<GrpcClient, String> {
        let tcp = tokio::net::TcpStream::connect(addr)
            .await
            .map_err(|e| e.to_string())?;
        let name = ServerName::try_from(authority.to_string()).map_err(|e| e.to_string())?;
        let connector = TlsConnector::from(insecure_client(&["h2"], false));
        let tls = connector
            .connect(name, tcp)
            .await
            .map_err(|e| e.to_string())?;
        GrpcClient::over(tls, "https", authority).await
    }

    async fn over<S>(io: S, scheme: &str, authority: &str) -> Result<GrpcClient, String>
    where
        S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let (sender, conn) =
            hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(io))
                .await
                .map_err(|e| e.to_string())?;
        tokio::spawn(conn);
        let origin: Uri = format!("{scheme}://{authority}")
            .parse()
            .map_err(|_| "origin")?;
        let grpc = tonic::client::Grpc::with_origin(H2(sender), origin)
            .max_decoding_message_size(64 << 20)
            .max_encoding_message_size(64 << 20);
        Ok(GrpcClient { grpc })
    }

    fn path(method: &str) -> http::uri::PathAndQuery {
        let p = format!("/sluice.test.Echo/{method}");
        p.parse().expect("path")
    }

    pub async fn unary(
        &mut self,
        req: tonic::Request<Msg>,
    ) -> Result<tonic::Response<Msg>, Status> {
        self.ready().await?;
        self.grpc
            .unary(req, Self::path("Unary"), Codec::default())
            .await
    }

    pub async fn server_stream(
        &mut self,
        req: tonic::Request<Msg>,
    ) -> Result<tonic::Response<Streaming<Msg>>, Status> {
        self.ready().await?;
        let path = Self::path("ServerStream");
        self.grpc
            .server_streaming(req, path, Codec::default())
            .await
    }

    pub async fn client_stream(
        &mut self,
        msgs: impl Stream<Item = Msg> + Send + 'static,
    ) -> Result<tonic::Response<Msg>, Status> {
        self.ready().await?;
        let path = Self::path("ClientStream");
        let req = tonic::Request::new(msgs);
        self.grpc
            .client_streaming(req, path, Codec::default())
            .await
    }

    pub async fn bidi(
        &mut self,
        msgs: impl Stream<Item = Msg> + Send + 'static,
    ) -> Result<tonic::Response<Streaming<Msg>>, Status> {
        self.ready().await?;
        let req = tonic::Request::new(msgs);
        self.grpc
            .streaming(req, Self::path("Bidi"), Codec::default())
            .await
    }

    async fn ready(&mut self) -> Result<(), Status> {
        self.grpc
            .ready()
            .await
            .map_err(|e| Status::unavailable(e.to_string()))
    }
}

/// hyper's HTTP/2 connection as the service tonic's client sends on.
#[derive(Clone)]
struct H2(hyper::client::conn::http2::SendRequest<tonic::body::Body>);

impl tower_service::Service<Request<tonic::body::Body>> for H2 {
    type Response = Response<Incoming>;
    type Error = hyper::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Response<Incoming>, hyper::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), hyper::Error>> {
        self.0.poll_ready(cx)
    }

    fn call(&mut self, req: Request<tonic::body::Body>) -> Self::Future {
        Box::pin(self.0.send_request(req))
    }
}
