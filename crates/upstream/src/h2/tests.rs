//! Tests of the workers' HTTP/2 connections against a real h2c server: Kong's keep-alive limits
//! (`upstream_keepalive_idle_timeout`, `upstream_keepalive_max_requests`) close and replace them, and a
//! call in progress keeps its connection however long it lasts; the write watch fires for an upstream
//! that takes no data, and not for a body that flows or waits on its client; a call handed over is
//! written at once, not when the worker gets round to the connection's task.

use super::*;
use crate::pool::{configure, Keepalive};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioExecutor;
use std::net::SocketAddr;
use std::sync::atomic::AtomicUsize;

/// Connections an h2c server accepted and saw closed.
#[derive(Default)]
struct Seen {
    accepted: AtomicUsize,
    closed: AtomicUsize,
}

/// An h2c server on 127.0.0.1:0 answering `ok` once it has read the request body, after `/slow`'s
/// 300 ms.
async fn server() -> (SocketAddr, Arc<Seen>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Arc::new(Seen::default());
    let counts = seen.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            counts.accepted.fetch_add(1, Ordering::SeqCst);
            let counts = counts.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(
                    |req: http::Request<hyper::body::Incoming>| async move {
                        if req.uri().path() == "/slow" {
                            tokio::time::sleep(Duration::from_millis(300)).await;
                        }
                        // The whole request body is read before the answer.
                        let _ = req.into_body().collect().await;
                        Ok::<_, std::convert::Infallible>(http::Response::new(Full::new(
                            Bytes::from("ok"),
                        )))
                    },
                );
                let _ = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
                counts.closed.fetch_add(1, Ordering::SeqCst);
            });
        }
    });
    (addr, seen)
}

/// One call on this worker's connection to `addr`, its response read whole; the lease ends with it.
async fn call(addr: SocketAddr, path: &str) {
    let key = PoolKey { addr, tls: 0 };
    let (mut sender, lease) = sender(key, None, Duration::from_secs(5)).await.unwrap();
    let req = http::Request::builder()
        .uri(format!("http://{addr}{path}"))
        .body(crate::body::full(Bytes::new()))
        .unwrap();
    sender.ready().await.unwrap();
    let resp = sender.send_request(req).await.unwrap();
    assert_eq!(resp.into_body().collect().await.unwrap().to_bytes(), "ok");
    drop(lease);
}

async fn settle() {
    tokio::time::sleep(Duration::from_millis(50)).await;
}

#[tokio::test]
async fn an_idle_connection_is_closed_and_the_next_call_opens_another() {
    let (addr, seen) = server().await;
    configure(Keepalive {
        idle_timeout: Duration::from_millis(200),
        ..Keepalive::default()
    });
    call(addr, "/").await;
    call(addr, "/").await;
    assert_eq!(seen.accepted.load(Ordering::SeqCst), 1);
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(seen.closed.load(Ordering::SeqCst), 1, "closed when idle");
    call(addr, "/").await;
    assert_eq!(seen.accepted.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_call_longer_than_the_idle_timeout_keeps_its_connection() {
    let (addr, seen) = server().await;
    configure(Keepalive {
        idle_timeout: Duration::from_millis(100),
        ..Keepalive::default()
    });
    call(addr, "/slow").await;
    settle().await;
    assert_eq!(seen.closed.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_connection_takes_max_requests_streams() {
    let (addr, seen) = server().await;
    configure(Keepalive {
        max_requests: 2,
        ..Keepalive::default()
    });
    for _ in 0..5 {
        call(addr, "/").await;
    }
    settle().await;
    // Two streams a connection: 2 + 2 + 1; the spent ones close once nothing holds them.
    assert_eq!(seen.accepted.load(Ordering::SeqCst), 3);
    assert_eq!(seen.closed.load(Ordering::SeqCst), 2);
}

/// An h2c server that takes each call's head and then neither reads its body nor answers.
async fn deaf_server() -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let service = hyper::service::service_fn(
                    |req: http::Request<hyper::body::Incoming>| async move {
                        let _held = req;
                        std::future::pending::<Result<http::Response<Full<Bytes>>, hyper::Error>>()
                            .await
                    },
                );
                let _ = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    addr
}

/// A request body fed by a task: `chunks` pieces of 64 KiB (endless when None), after `pause`.
fn fed_body(chunks: Option<usize>, pause: Duration) -> ProxyBody {
    let (tx, body) = crate::body::ChannelBody::channel();
    tokio::spawn(async move {
        let piece = Bytes::from(vec![b'x'; 64 << 10]);
        tokio::time::sleep(pause).await;
        let mut sent = 0;
        while chunks.is_none_or(|n| sent < n) {
            if tx
                .send(Ok(http_body::Frame::data(piece.clone())))
                .await
                .is_err()
            {
                return;
            }
            sent += 1;
        }
    });
    body.boxed()
}

/// Sends a watched call with `body`; true when the write watch fired before an answer came.
async fn stalls(addr: SocketAddr, body: ProxyBody, write_timeout: Duration) -> bool {
    let key = PoolKey { addr, tls: 0 };
    let (mut sender, _lease) = sender(key, None, Duration::from_secs(5)).await.unwrap();
    let (body, mut watch) = watch(body, write_timeout);
    let req = http::Request::builder()
        .method("POST")
        .uri(format!("http://{addr}/upload"))
        .body(body)
        .unwrap();
    sender.ready().await.unwrap();
    let call = sender.send_request(req);
    let outcome = tokio::time::timeout(Duration::from_secs(10), async {
        tokio::select! {
            answered = call => { answered.unwrap(); false }
            () = watch.stalled() => true,
        }
    });
    outcome.await.expect("an answer or a stall within 10 s")
}

#[tokio::test]
async fn an_upstream_that_takes_no_data_stalls_the_write_watch() {
    let addr = deaf_server().await;
    let started = Instant::now();
    assert!(
        stalls(
            addr,
            fed_body(None, Duration::ZERO),
            Duration::from_millis(300)
        )
        .await
    );
    assert!(started.elapsed() >= Duration::from_millis(300));
}

#[tokio::test]
async fn a_body_that_keeps_going_or_waits_on_its_client_does_not_stall() {
    let (addr, _) = server().await;
    // 4 MiB taken as fast as it comes; then one piece after the client was silent for 3× the timeout.
    assert!(
        !stalls(
            addr,
            fed_body(Some(64), Duration::ZERO),
            Duration::from_secs(1)
        )
        .await
    );
    assert!(
        !stalls(
            addr,
            fed_body(Some(1), Duration::from_millis(900)),
            Duration::from_millis(300)
        )
        .await
    );
}

/// An h2c server answering calls as gRPC does (a small DATA frame, then trailers), all at once when
/// `calls` have arrived.
async fn small_reply_server(calls: usize) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let barrier = Arc::new(tokio::sync::Barrier::new(calls));
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let barrier = barrier.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(
                    move |_req: http::Request<hyper::body::Incoming>| {
                        let barrier = barrier.clone();
                        async move {
                            barrier.wait().await;
                            // A gRPC reply: a small DATA frame, then the trailers (the DATA frame
                            // does not end the stream).
                            let (tx, body) = crate::body::ChannelBody::channel();
                            let mut trailers = http::HeaderMap::new();
                            trailers.insert("grpc-status", http::HeaderValue::from_static("0"));
                            let data = http_body::Frame::data(Bytes::from_static(b"1234567"));
                            tx.send(Ok(data)).await.unwrap();
                            tx.send(Ok(http_body::Frame::trailers(trailers)))
                                .await
                                .unwrap();
                            Ok::<_, std::convert::Infallible>(http::Response::new(body))
                        }
                    },
                );
                let _ = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
                    .max_concurrent_streams(1000)
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    addr
}

#[tokio::test]
async fn many_small_replies_not_yet_read_do_not_end_the_connection() {
    let addr = small_reply_server(400).await;
    let key = PoolKey { addr, tls: 0 };
    // 400 calls in flight whose one-frame replies all arrive before the relay reads any of them (a busy
    // worker): h2 counts each unread small frame against a budget of half the connection window.
    let mut heads = Vec::new();
    for _ in 0..400 {
        let (mut sender, lease) = sender(key, None, Duration::from_secs(5)).await.unwrap();
        let req = http::Request::builder()
            .uri(format!("http://{addr}/x.Y/Z"))
            .body(crate::body::full(Bytes::new()))
            .unwrap();
        sender.ready().await.unwrap();
        heads.push((sender.send_request(req), lease));
    }
    let mut bodies = Vec::new();
    for (call, lease) in heads {
        let resp = call.await.expect("a response head");
        bodies.push((resp.into_body(), lease));
    }
    for (body, _lease) in bodies {
        let reply = body.collect().await.expect("a whole reply");
        assert_eq!(
            reply.trailers().map(|t| t["grpc-status"].clone()),
            Some(http::HeaderValue::from_static("0"))
        );
        assert_eq!(reply.to_bytes(), "1234567");
    }
}

/// Runs `accept` on a thread and runtime of its own (so that the server's tasks are not the client's),
/// with a listener on 127.0.0.1; the listener's address.
pub(super) fn on_own_thread<F>(
    accept: impl FnOnce(tokio::net::TcpListener) -> F + Send + 'static,
) -> SocketAddr
where
    F: std::future::Future<Output = ()>,
{
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    std::thread::spawn(move || {
        rt.block_on(
            async move { accept(tokio::net::TcpListener::from_std(listener).unwrap()).await },
        )
    });
    addr
}

/// An h2c server on a thread of its own ([`on_own_thread`]), answering `ok` and telling `arrived` of
/// each request head as it comes.
fn telling_server() -> (SocketAddr, std::sync::mpsc::Receiver<()>) {
    let (tell, arrived) = std::sync::mpsc::channel();
    let addr = on_own_thread(|listener| async move {
        while let Ok((stream, _)) = listener.accept().await {
            let tell = tell.clone();
            let service = hyper::service::service_fn(move |_req| {
                let _ = tell.send(());
                async {
                    Ok::<_, std::convert::Infallible>(http::Response::new(Full::new(Bytes::from(
                        "ok",
                    ))))
                }
            });
            tokio::spawn(
                hyper::server::conn::http2::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(stream), service),
            );
        }
    });
    (addr, arrived)
}

#[tokio::test]
async fn a_call_leaves_before_the_worker_runs_its_other_tasks() {
    let (addr, arrived) = telling_server();
    call(addr, "/first").await;
    arrived.recv().unwrap();
    let key = PoolKey { addr, tls: 0 };
    let (mut sender, lease) = sender(key, None, Duration::from_secs(5)).await.unwrap();
    sender.ready().await.unwrap();
    let req = http::Request::builder()
        .uri(format!("http://{addr}/second"))
        .body(crate::body::full(Bytes::new()))
        .unwrap();
    let answer = sender.send_request(req);
    lease.drive_now();
    // This worker's thread is held now, as by the other tasks it runs: only what the nudge wrote can
    // reach the upstream meanwhile.
    let seen = arrived.recv_timeout(Duration::from_secs(2));
    assert!(seen.is_ok(), "the call waited for the connection's task");
    let resp = answer.await.unwrap();
    assert_eq!(resp.into_body().collect().await.unwrap().to_bytes(), "ok");
}
