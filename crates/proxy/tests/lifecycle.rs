//! Reloads and shutdown: a request finishes on the snapshot it started on, shutdown drains in-flight
//! requests within the grace period and refuses new connections, counters add up, workers share the port.

mod common;

use common::{get, one_service, Proxy};
use sluice_plugins::Registry;
use sluice_proxy::ProxySettings;
use sluice_testkit::{client, EchoUpstream};
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_flight_requests_finish_on_their_snapshot() {
    let (old, new) = (EchoUpstream::named("old"), EchoUpstream::named("new"));
    let proxy = Proxy::start(&one_service(&old.url(), &["paths: [/a]"]));
    let slow = tokio::spawn(get(proxy.url("/a"), vec![("x-echo-delay-ms", "500")]));
    while old.requests() == 0 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    proxy.load(&one_service(&new.url(), &["paths: [/b]"]));
    let (status, _, body) = slow.await.unwrap();
    assert_eq!((status, body["upstream"].as_str()), (200, Some("old")));
    assert_eq!(get(proxy.url("/a"), vec![]).await.0, 404);
    let (status, _, body) = get(proxy.url("/b"), vec![]).await;
    assert_eq!((status, body["upstream"].as_str()), (200, Some("new")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_drains_in_flight_requests_then_refuses_connections() {
    let up = EchoUpstream::start();
    let proxy = Proxy::start(&one_service(&up.url(), &["paths: [/]"]));
    let url = proxy.url("/");
    let slow = tokio::spawn(get(url.clone(), vec![("x-echo-delay-ms", "400")]));
    while up.requests() == 0 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    proxy.shutdown(Duration::from_secs(10)).await;
    let (status, _, _) = slow.await.unwrap();
    assert_eq!(status, 200, "the in-flight request finished");
    assert!(
        client().get(&url).send().await.is_err(),
        "no longer listening"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_grace_period_bounds_shutdown() {
    let up = EchoUpstream::start();
    let proxy = Proxy::start(&one_service(&up.url(), &["paths: [/]"]));
    let url = proxy.url("/");
    let stuck = tokio::spawn(async move {
        client()
            .get(url)
            .header("x-echo-delay-ms", "60000")
            .send()
            .await
    });
    while up.requests() == 0 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let done = tokio::time::timeout(
        Duration::from_secs(20),
        proxy.shutdown(Duration::from_millis(100)),
    )
    .await;
    assert!(
        done.is_ok(),
        "shutdown returned long before the upstream answered"
    );
    assert!(
        stuck.await.unwrap().is_err(),
        "the stuck request was cut off"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workers_share_the_port_and_counters_add_up() {
    let up = EchoUpstream::start();
    let settings = ProxySettings {
        workers: 3,
        ..ProxySettings::default()
    };
    let proxy = Proxy::with(
        &one_service(&up.url(), &["paths: [/]"]),
        settings,
        Registry::builtin(),
    );
    let mut tasks = Vec::new();
    for _ in 0..30 {
        // A fresh client per request: one connection each, spread over the workers by the kernel.
        let url = proxy.url("/");
        tasks.push(tokio::spawn(async move {
            let c = reqwest::Client::builder().no_proxy().build().unwrap();
            c.get(url).send().await.unwrap().status().as_u16()
        }));
    }
    for t in tasks {
        assert_eq!(t.await.unwrap(), 200);
    }
    let stats = proxy.server().stats();
    assert_eq!(stats.total_requests(), 30);
    assert_eq!(stats.accepted_connections(), 30);
    let json = stats.to_kong_json();
    assert_eq!(json["total_requests"], 30);
    assert_eq!(json["connections_handled"], 30);
}

/// `client_header_timeout` and `keepalive_timeout`: a client that trickles a head, or idles on a keep-alive
/// connection, is cut off; a request that takes longer than the timeout to answer is not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_header_timeout_closes_slow_and_idle_clients_only() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let upstream = EchoUpstream::start();
    let settings = ProxySettings {
        client_header_timeout: Duration::from_millis(400),
        keepalive_timeout: Duration::from_millis(400),
        ..ProxySettings::default()
    };
    let proxy = Proxy::with(
        &one_service(&upstream.url(), &["paths: [/]"]),
        settings,
        Registry::builtin(),
    );

    // A slow upstream answer (1 s, more than twice the timeout) on a keep-alive connection goes through.
    let mut s = tokio::net::TcpStream::connect(proxy.addr).await.unwrap();
    s.write_all(b"GET /slow HTTP/1.1\r\nHost: t\r\nx-echo-delay-ms: 1000\r\n\r\n")
        .await
        .unwrap();
    let mut buf = vec![0u8; 4096];
    let n = s.read(&mut buf).await.unwrap();
    assert!(
        String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&buf[..n])
    );
    // Then idle: closed after about the timeout (read returns 0).
    let started = std::time::Instant::now();
    let mut rest = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut rest)).await;
    assert!(read.is_ok(), "an idle keep-alive connection was not closed");
    assert!(started.elapsed() >= Duration::from_millis(300));

    // A head trickled one byte at a time never completes: closed too.
    let mut s = tokio::net::TcpStream::connect(proxy.addr).await.unwrap();
    let closed = tokio::time::timeout(Duration::from_secs(5), async {
        for b in b"GET / HTTP/1.1\r\nHost: t\r\nX-Slow: ".iter().cycle() {
            if s.write_all(&[*b]).await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    assert!(closed.is_ok(), "a trickled head was not cut off");
}
