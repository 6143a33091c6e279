//! A connection's calls run in its own task ([`Local`]): a call in flight adds no task to the worker,
//! and a body streamed both ways, with trailers both ways, still passes.

use crate::body::{BoxError, ChannelBody};
use crate::conn::PoolKey;
use crate::h2::connect;
use bytes::Bytes;
use http::HeaderMap;
use http_body::Frame;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::{TokioExecutor, TokioIo};
use std::net::SocketAddr;
use std::time::Duration;
use tokio::sync::mpsc;

/// An h2c server on its own thread and runtime (so that its tasks are not counted with the client's):
/// `/echo` answers with the request's body as it comes (trailers included), `/slow` with `ok` once it
/// has read the whole body.
fn server() -> SocketAddr {
    crate::h2::tests::on_own_thread(accept)
}

async fn accept(listener: tokio::net::TcpListener) {
    while let Ok((stream, _)) = listener.accept().await {
        tokio::spawn(serve(stream));
    }
}

async fn serve(stream: tokio::net::TcpStream) {
    let service = hyper::service::service_fn(|req: http::Request<hyper::body::Incoming>| async {
        if req.uri().path() == "/echo" {
            return Ok::<_, std::convert::Infallible>(http::Response::new(req.into_body().boxed()));
        }
        let _ = req.into_body().collect().await;
        let ok = Full::new(Bytes::from("ok")).map_err(|e| match e {}).boxed();
        Ok(http::Response::new(ok))
    });
    let _ = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
        .serve_connection(TokioIo::new(stream), service)
        .await;
}

type Tx = mpsc::Sender<Result<Frame<Bytes>, BoxError>>;

/// A request to `path` whose body is fed through the returned sender.
fn streamed(addr: SocketAddr, path: &str) -> (http::Request<crate::body::ProxyBody>, Tx) {
    let (tx, body) = ChannelBody::channel();
    let req = http::Request::post(format!("http://{addr}{path}"))
        .body(body.boxed())
        .unwrap();
    (req, tx)
}

async fn alive() -> usize {
    tokio::time::sleep(Duration::from_millis(20)).await;
    tokio::runtime::Handle::current()
        .metrics()
        .num_alive_tasks()
}

#[tokio::test(flavor = "current_thread")]
async fn a_call_in_flight_is_no_task_of_its_own() {
    let addr = server();
    let mut sender = connect(PoolKey { addr, tls: 0 }, None).await.unwrap();
    sender.ready().await.unwrap();
    let before = alive().await;
    let (req, tx) = streamed(addr, "/slow");
    tx.send(Ok(Frame::data(Bytes::from("a")))).await.unwrap();
    let mut call = std::pin::pin!(sender.send_request(req));
    let early = tokio::time::timeout(Duration::from_millis(50), call.as_mut()).await;
    assert!(early.is_err(), "answered before the body ended");
    assert_eq!(
        alive().await,
        before,
        "the call (its pipe, its response) spawned tasks"
    );
    drop(tx);
    let resp = call.await.unwrap();
    assert_eq!(resp.into_body().collect().await.unwrap().to_bytes(), "ok");
}

#[tokio::test(flavor = "current_thread")]
async fn a_body_streams_both_ways_with_its_trailers() {
    let addr = server();
    let mut sender = connect(PoolKey { addr, tls: 0 }, None).await.unwrap();
    sender.ready().await.unwrap();
    let (req, tx) = streamed(addr, "/echo");
    tx.send(Ok(Frame::data(Bytes::from("one")))).await.unwrap();
    let resp = sender.send_request(req).await.unwrap();
    let mut body = resp.into_body();
    assert_eq!(
        body.frame().await.unwrap().unwrap().into_data().unwrap(),
        "one"
    );
    tx.send(Ok(Frame::data(Bytes::from("two")))).await.unwrap();
    assert_eq!(
        body.frame().await.unwrap().unwrap().into_data().unwrap(),
        "two"
    );
    let mut trailers = HeaderMap::new();
    trailers.insert("grpc-status", "0".parse().unwrap());
    tx.send(Ok(Frame::trailers(trailers.clone())))
        .await
        .unwrap();
    drop(tx);
    assert_eq!(
        body.frame()
            .await
            .unwrap()
            .unwrap()
            .into_trailers()
            .unwrap(),
        trailers
    );
}
