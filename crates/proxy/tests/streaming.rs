//! Bodies: large uploads and downloads streamed both ways (HTTP/1.1 and h2c), the read timeout between
//! body chunks, and upstreams that close kept-alive connections.

mod common;

use common::{get, one_service, raw, Proxy};
use sluice_testkit::{client, h2c_client, EchoUpstream};
use std::net::SocketAddr;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const BIG: usize = 8 * 1024 * 1024;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_bodies_stream_both_ways() {
    let up = EchoUpstream::start();
    let proxy = Proxy::start(&one_service(&up.url(), &["paths: [/]"]));
    for c in [client(), h2c_client()] {
        let resp = c
            .post(proxy.url("/up"))
            .body(vec![b'x'; BIG])
            .send()
            .await
            .unwrap();
        let body: serde_json::Value = resp.json().await.unwrap();
        assert_eq!(body["body_len"], BIG);
        let resp = c
            .get(proxy.url("/down"))
            .header("x-echo-body-size", BIG.to_string())
            .send()
            .await
            .unwrap();
        assert_eq!(resp.bytes().await.unwrap().len(), BIG);
    }
    let mut chunked = b"POST /chunked HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n".to_vec();
    for _ in 0..30 {
        chunked.extend_from_slice(format!("{:x}\r\n", 100_000).as_bytes());
        chunked.extend_from_slice(&[b'a'; 100_000]);
        chunked.extend_from_slice(b"\r\n");
    }
    chunked.extend_from_slice(b"0\r\n\r\n");
    let resp = raw(proxy.addr, &chunked).await;
    assert!(resp.starts_with("HTTP/1.1 200"), "{resp}");
    assert!(resp.contains("\"body_len\":3000000"), "{resp}");
}

/// A raw upstream: answers up to `answers` requests per connection with `response` (then reads the next
/// request and closes without a word, like a server whose keep-alive timeout just fired), and with `stall`
/// keeps the connection open without sending more.
async fn raw_upstream(response: &'static [u8], answers: usize, stall: bool) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = vec![0u8; 65536];
                for _ in 0..answers {
                    match stream.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(_) => {}
                    }
                    if stream.write_all(response).await.is_err() {
                        return;
                    }
                    if stall {
                        tokio::time::sleep(std::time::Duration::from_secs(30)).await;
                    }
                }
                let _ = stream.read(&mut buf).await;
            });
        }
    });
    addr
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_upstream_mid_body_hits_the_read_timeout() {
    let addr = raw_upstream(
        b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\nabc",
        1,
        true,
    )
    .await;
    let yaml = format!(
        "_format_version: \"3.0\"\nservices:\n- name: s\n  url: http://{addr}\n  read_timeout: 300\n  routes: [{{paths: [/]}}]\n"
    );
    let proxy = Proxy::start(&yaml);
    let resp = client().get(proxy.url("/")).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    assert!(
        resp.bytes().await.is_err(),
        "the body must fail, not hang or complete"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bodyless_requests_are_replayed_when_a_kept_alive_connection_closes_unanswered() {
    let addr = raw_upstream(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok", 1, false).await;
    let yaml = format!(
        "_format_version: \"3.0\"\nservices:\n- name: s\n  url: http://{addr}\n  routes: [{{paths: [/]}}]\n"
    );
    let proxy = Proxy::start(&yaml);
    for _ in 0..10 {
        let (status, _, _) = get(&proxy.url("/"), &[]).await;
        assert_eq!(status, 200);
    }
    // A request with a body is not replayed: on the pooled connection that closes it is a 502, the next
    // one gets a fresh connection.
    let first = client()
        .post(proxy.url("/"))
        .body("x")
        .send()
        .await
        .unwrap();
    let second = client()
        .post(proxy.url("/"))
        .body("x")
        .send()
        .await
        .unwrap();
    assert_eq!(
        (first.status().as_u16(), second.status().as_u16()),
        (502, 200)
    );
}
