//! Tests of the connection pool against a real HTTP/1.1 server: reuse once a body was read, refused
//! connects, the idle cap, the requests per connection, and an idle timeout of 0 meaning no limit.

use super::*;
use crate::pooled::PooledBody;
use bytes::Bytes;
use http_body_util::BodyExt;
use hyper_util::rt::TokioIo;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// An HTTP/1.1 server on 127.0.0.1:0 that counts the connections it accepted.
async fn counting_server() -> (SocketAddr, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let accepted = Arc::new(AtomicUsize::new(0));
    let count = accepted.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            count.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                let service = hyper::service::service_fn(
                    |req: http::Request<hyper::body::Incoming>| async move {
                        let close = req.uri().path() == "/close";
                        let mut resp =
                            http::Response::new(http_body_util::Full::new(Bytes::from("ok")));
                        if close {
                            resp.headers_mut()
                                .insert("connection", "close".parse().unwrap());
                        }
                        Ok::<_, std::convert::Infallible>(resp)
                    },
                );
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    (addr, accepted)
}

async fn exchange(addr: SocketAddr, path: &str) -> bool {
    let mut conn = checkout(plain(addr), None, Duration::from_secs(5), Instant::now())
        .await
        .unwrap();
    let reused = conn.reused();
    let head = format!("GET {path} HTTP/1.1\r\nhost: t\r\n\r\n");
    let resp = conn.exchange_head(head.as_bytes(), false).await.unwrap();
    let body = PooledBody::new(conn, resp.framing, resp.keep_alive, Duration::from_secs(5));
    assert_eq!(body.collect().await.unwrap().to_bytes(), "ok");
    reused
}

#[tokio::test]
async fn connections_are_reused_once_their_body_was_read() {
    let (addr, accepted) = counting_server().await;
    assert!(!exchange(addr, "/").await);
    assert_eq!(idle_count(plain(addr)), 1);
    for _ in 0..3 {
        assert!(exchange(addr, "/").await);
    }
    assert_eq!(accepted.load(Ordering::SeqCst), 1);
    // `Connection: close` takes the connection out of the pool.
    assert!(exchange(addr, "/close").await);
    assert_eq!(idle_count(plain(addr)), 0);
    assert!(!exchange(addr, "/").await);
    assert_eq!(accepted.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn refused_connections_are_bad_gateway() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    assert_eq!(
        checkout(plain(addr), None, Duration::from_secs(5), Instant::now())
            .await
            .err(),
        Some(UpstreamError::Connect)
    );
}

#[tokio::test]
async fn the_idle_cap_holds() {
    let (addr, _) = counting_server().await;
    configure(Keepalive {
        pool_size: 1,
        ..Keepalive::default()
    });
    let a = checkout(plain(addr), None, Duration::from_secs(5), Instant::now())
        .await
        .unwrap();
    let b = checkout(plain(addr), None, Duration::from_secs(5), Instant::now())
        .await
        .unwrap();
    checkin(a);
    checkin(b);
    assert_eq!(idle_count(plain(addr)), 1);
}

#[tokio::test]
async fn a_connection_closes_after_max_requests() {
    let (addr, accepted) = counting_server().await;
    configure(Keepalive {
        max_requests: 3,
        ..Keepalive::default()
    });
    for _ in 0..7 {
        exchange(addr, "/").await;
    }
    // Three exchanges a connection: 3 + 3 + 1.
    assert_eq!(accepted.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn no_limits_when_zero() {
    let (addr, accepted) = counting_server().await;
    configure(Keepalive {
        max_requests: 0,
        idle_timeout: Duration::ZERO,
        ..Keepalive::default()
    });
    for _ in 0..5 {
        exchange(addr, "/").await;
    }
    assert_eq!(accepted.load(Ordering::SeqCst), 1);
    // A zero timeout keeps an idle connection whatever its age.
    let later = Instant::now() + Duration::from_secs(3600);
    assert!(take_idle(plain(addr), later).is_some());
}

fn plain(addr: std::net::SocketAddr) -> PoolKey {
    PoolKey { addr, tls: 0 }
}
