//! Gateway-made responses: Kong's statuses, messages, bodies in the negotiated format, and headers.

mod common;

use common::{get, one_service, raw, Proxy};
use sluice_testkit::{client, closed_port, EchoUpstream, SilentServer};
use std::net::SocketAddr;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_route_is_a_negotiated_404() {
    let proxy = Proxy::start("_format_version: \"3.0\"\n");
    // (Accept, content type prefix, body check)
    let cases = [
        (
            None,
            "application/json",
            "\"message\":\"no Route matched with those values\"",
        ),
        (
            Some("text/html"),
            "text/html",
            "<p>no Route matched with those values.</p>",
        ),
        (
            Some("application/xml"),
            "application/xml",
            "<message>no Route matched with those values</message>",
        ),
        (
            Some("text/plain"),
            "text/plain",
            "no Route matched with those values\nrequest_id: ",
        ),
        (
            Some("text/html;q=0.1, text/plain"),
            "text/plain",
            "request_id: ",
        ),
    ];
    for (accept, content_type, snippet) in cases {
        let mut req = client().get(proxy.url("/x"));
        if let Some(a) = accept {
            req = req.header("accept", a);
        }
        let resp = req.send().await.unwrap();
        assert_eq!(resp.status(), 404);
        let headers = resp.headers().clone();
        assert!(
            headers["content-type"]
                .to_str()
                .unwrap()
                .starts_with(content_type),
            "{accept:?}"
        );
        assert_eq!(headers["server"], sluice_proxy::PRODUCT);
        assert!(headers["x-kong-response-latency"]
            .to_str()
            .unwrap()
            .parse::<u64>()
            .is_ok());
        let rid = headers["x-kong-request-id"].to_str().unwrap().to_string();
        let body = resp.text().await.unwrap();
        assert!(body.contains(snippet), "{accept:?}: {body}");
        assert!(body.contains(&rid), "the body names the request id");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_only_routes_answer_426_or_redirect() {
    let up = EchoUpstream::start();
    let proxy = Proxy::start(&one_service(
        &up.url(),
        &[
            "paths: [/tls], protocols: [https]",
            "paths: [/moved], protocols: [https], https_redirect_status_code: 301",
        ],
    ));
    let (status, headers, body) = get(&proxy.url("/tls"), &[]).await;
    assert_eq!(status, 426);
    assert_eq!(body["message"], "Please use HTTPS protocol");
    assert_eq!(headers["upgrade"], "TLS/1.2, HTTP/1.1");
    let no_redirect = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .build()
        .unwrap();
    let resp = no_redirect
        .get(proxy.url("/moved/a?b=1"))
        .header("host", "Shop.Test:8000")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 301);
    assert_eq!(resp.headers()["location"], "https://shop.test/moved/a?b=1");
    assert_eq!(up.requests(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstream_failures_map_to_kongs_statuses() {
    let silent = SilentServer::start();
    let dead = closed_port();
    let yaml = format!(
        r#"_format_version: "3.0"
services:
- {{name: refused, url: "http://127.0.0.1:{dead}", retries: 0, routes: [{{paths: [/refused]}}]}}
- {{name: slow, url: "http://127.0.0.1:{quiet}", read_timeout: 200, routes: [{{paths: [/slow]}}]}}
- {{name: dns, url: "http://sluice-test.invalid", routes: [{{paths: [/dns]}}]}}
- {{name: tls, url: "https://127.0.0.1:{dead}", routes: [{{paths: [/tls]}}]}}
- {{name: nobody, host: empty.upstream, routes: [{{paths: [/nobody]}}]}}
routes:
- {{name: orphan, paths: [/orphan]}}
upstreams:
- name: empty.upstream
  targets: [{{target: "127.0.0.1:{dead}", weight: 0}}]
"#,
        quiet = silent.port()
    );
    let proxy = Proxy::start(&yaml);
    let cases = [
        (
            "/refused",
            502,
            "An invalid response was received from the upstream server",
        ),
        ("/slow", 504, "The upstream server is timing out"),
        ("/dns", 503, "name resolution failed"),
        (
            "/tls",
            502,
            "An invalid response was received from the upstream server",
        ),
        (
            "/nobody",
            503,
            "failure to get a peer from the ring-balancer",
        ),
        ("/orphan", 503, "no Service found with those values"),
    ];
    for (path, status, message) in cases {
        let (got, headers, body) = get(&proxy.url(path), &[]).await;
        assert_eq!(
            (got, body["message"].as_str()),
            (status, Some(message)),
            "{path}"
        );
        assert_eq!(
            body["request_id"],
            headers["x-kong-request-id"].to_str().unwrap()
        );
    }
    // nginx-made errors fall back to Content-Type when there is no Accept.
    let request = b"POST /refused HTTP/1.1\r\nhost: x\r\ncontent-type: text/html\r\ncontent-length: 1\r\nconnection: close\r\n\r\nx";
    let resp = raw(proxy.addr, request).await.to_ascii_lowercase();
    assert!(resp.starts_with("http/1.1 502"), "{resp}");
    assert!(resp.contains("content-type: text/html"), "{resp}");
    let request =
        b"GET /x HTTP/1.1\r\nhost: x\r\ncontent-type: text/html\r\nconnection: close\r\n\r\n";
    let resp = raw(proxy.addr, request).await.to_ascii_lowercase();
    assert!(resp.starts_with("http/1.1 404"), "{resp}");
    assert!(resp.contains("content-type: application/json"), "{resp}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_requests_get_400_and_the_proxy_stays_up() {
    let up = EchoUpstream::start();
    let proxy = Proxy::start(&one_service(&up.url(), &["paths: [/]"]));
    let huge = format!(
        "GET / HTTP/1.1\r\nhost: x\r\nx-big: {}\r\n\r\n",
        "a".repeat(100_000)
    );
    let bad: [&[u8]; 4] = [
        b"NOT HTTP AT ALL\r\n\r\n",
        b"GET / HTTP/1.1\r\nbad header line\r\n\r\n",
        b"GET / HTTP/1.1\r\nhost: x\r\ncontent-length: 5\r\ncontent-length: 7\r\n\r\n",
        huge.as_bytes(),
    ];
    for request in bad {
        let resp = raw(proxy.addr, request).await;
        assert!(
            resp.starts_with("HTTP/1.1 400") || resp.starts_with("HTTP/1.1 431"),
            "{}: {resp}",
            String::from_utf8_lossy(&request[..20])
        );
    }
    assert_eq!(get(&proxy.url("/"), &[]).await.0, 200);
    assert_eq!(up.requests(), 1);
}

/// A listener whose accept queue is full, so new connections hang in the handshake.
fn unaccepting_listener() -> (socket2::Socket, Vec<socket2::Socket>, SocketAddr) {
    use socket2::{Domain, Socket, Type};
    let listener = Socket::new(Domain::IPV4, Type::STREAM, None).unwrap();
    listener
        .bind(&"127.0.0.1:0".parse::<SocketAddr>().unwrap().into())
        .unwrap();
    listener.listen(0).unwrap();
    let addr = listener.local_addr().unwrap().as_socket().unwrap();
    let fillers = (0..4)
        .map(|_| {
            let s = Socket::new(Domain::IPV4, Type::STREAM, None).unwrap();
            s.set_nonblocking(true).unwrap();
            let _ = s.connect(&addr.into());
            s
        })
        .collect();
    std::thread::sleep(std::time::Duration::from_millis(50));
    (listener, fillers, addr)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connect_timeouts_are_504() {
    let (_listener, _fillers, addr) = unaccepting_listener();
    let yaml = format!(
        "_format_version: \"3.0\"\nservices:\n- name: s\n  url: http://{addr}\n  connect_timeout: 200\n  retries: 1\n  routes: [{{paths: [/]}}]\n"
    );
    let proxy = Proxy::start(&yaml);
    let (status, _, body) = get(&proxy.url("/"), &[]).await;
    assert_eq!(
        (status, body["message"].as_str()),
        (504, Some("The upstream server is timing out"))
    );
}
