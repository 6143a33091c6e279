use super::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The upstream serving `body_size`-byte answers on an ephemeral port of its own.
pub(crate) async fn started(body_size: usize) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(serve_on(listener, body_size));
    addr
}

#[tokio::test]
async fn answers_with_a_fixed_body_on_keep_alive() {
    let addr = started(5).await;
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    // Two requests on one connection: the second proves keep-alive.
    for _ in 0..2 {
        s.write_all(b"GET /r1 HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        let mut buf = vec![0u8; 1024];
        let mut got = String::new();
        while !got.ends_with("xxxxx") {
            let n = s.read(&mut buf).await.unwrap();
            assert!(n > 0, "connection closed: {got}");
            got.push_str(&String::from_utf8_lossy(&buf[..n]));
        }
        assert!(got.starts_with("HTTP/1.1 200 OK"), "{got}");
        assert!(
            got.to_ascii_lowercase().contains("content-length: 5"),
            "{got}"
        );
    }
}

#[tokio::test]
async fn cacheable_paths_are_text() {
    let addr = started(3).await;
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    for (path, typed) in [("/cacheable/r0", true), ("/r0", false)] {
        let req = format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n");
        s.write_all(req.as_bytes()).await.unwrap();
        let mut buf = vec![0u8; 1024];
        let mut got = String::new();
        while !got.ends_with("xxx") {
            let n = s.read(&mut buf).await.unwrap();
            assert!(n > 0, "connection closed: {got}");
            got.push_str(&String::from_utf8_lossy(&buf[..n]));
        }
        let lower = got.to_ascii_lowercase();
        assert_eq!(lower.contains("content-type: text/plain"), typed, "{got}");
    }
}

#[tokio::test]
async fn json_lines_are_read_and_dropped() {
    let addr = started(3).await;
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    s.write_all(b"{\"request\":{}}\n{\"request\":{}}\n")
        .await
        .unwrap();
    s.shutdown().await.unwrap();
    // An HTTP server would answer 400 and close; a discarding one says nothing until we closed.
    let mut got = Vec::new();
    s.read_to_end(&mut got).await.unwrap();
    assert!(got.is_empty(), "{}", String::from_utf8_lossy(&got));
}

#[tokio::test]
async fn answers_grpc_over_h2c_and_counts_calls() {
    use http_body_util::BodyExt;
    let addr = started(3).await;
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (mut send, conn) = hyper::client::conn::http2::handshake(
        hyper_util::rt::TokioExecutor::new(),
        TokioIo::new(tcp),
    )
    .await
    .unwrap();
    tokio::spawn(conn);
    let before = grpc::calls();
    let req = hyper::Request::post("http://perf/perf.R0/Unary")
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .body(Full::new(Bytes::from(grpc::frame(grpc::REQUEST))))
        .unwrap();
    let resp = send.send_request(req).await.unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["content-type"], "application/grpc");
    let body = resp.into_body().collect().await.unwrap();
    assert_eq!(body.trailers().unwrap()["grpc-status"], "0");
    assert_eq!(
        body.to_bytes().as_ref(),
        grpc::frame(grpc::REPLY).as_slice()
    );
    assert!(grpc::calls() > before);
    // The count over HTTP/1.1.
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let get = format!(
        "GET {} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        grpc::CALLS_PATH
    );
    s.write_all(get.as_bytes()).await.unwrap();
    let mut got = String::new();
    s.read_to_string(&mut got).await.unwrap();
    let count: u64 = got.rsplit("\r\n\r\n").next().unwrap().parse().unwrap();
    assert!(count >= 1, "{got}");
}

#[tokio::test]
async fn websocket_handshake_needs_a_key() {
    let addr = started(3).await;
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    s.write_all(
        b"GET /r0 HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
    )
    .await
    .unwrap();
    let mut buf = vec![0u8; 1024];
    let n = s.read(&mut buf).await.unwrap();
    assert!(
        buf[..n].starts_with(b"HTTP/1.1 400"),
        "{}",
        String::from_utf8_lossy(&buf[..n])
    );
}
