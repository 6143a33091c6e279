//! Router fidelity through the real binary (issue 27): the five places where a replay of Kong's router spec
//! (`traditional_compatible`) disagreed with Sluice — a port in `Host`, header-name normalization, wildcard
//! route SNIs, the tie-break between routes of equal priority, and a path that is not UTF-8.

use serde_json::Value;
use sluice_testkit::{https_client, EchoUpstream, Gateway};
use std::io::{Read, Write};

mod support;

const BIN: &str = env!("CARGO_BIN_EXE_sluice");

/// Request headers of one case.
type Headers = &'static [(&'static str, &'static str)];

/// Kong's spec ids: `…8101`, `…8102`, … (ties go to the larger id).
fn id(n: u32) -> String {
    format!("e8fb37f1-102d-461e-9c51-6608a6bb8{n:03}")
}

/// One service per route, so the upstream path names the route that was chosen: `(name, route fields)`.
fn config(up: &EchoUpstream, routes: &[(&str, &str)]) -> String {
    let p = up.port();
    let mut yaml = String::from("_format_version: \"3.0\"\nservices:\n");
    for (name, fields) in routes {
        yaml += &format!(
            "- name: {name}\n  url: http://127.0.0.1:{p}/{name}\n  routes:\n  - {{name: {name}, {fields}}}\n"
        );
    }
    yaml
}

/// Status and the route (first upstream path segment) a request reached; "" when the gateway answered.
async fn which(url: String, headers: &[(&str, &str)]) -> (u16, String) {
    let (status, _, body) = sluice_testkit::get_json(&url, headers).await;
    let route = body["path"].as_str().unwrap_or("").trim_start_matches('/');
    (status, route.split('/').next().unwrap_or("").to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_route_host_with_a_port_needs_that_port() {
    let up = EchoUpstream::start();
    let routes = [
        ("anyport", format!("id: {}, hosts: [a.org]", id(101))),
        (
            "port321",
            format!("id: {}, hosts: [\"a.org:321\"]", id(113)),
        ),
        (
            "portonly",
            format!("id: {}, hosts: [\"c.org:321\"]", id(114)),
        ),
    ];
    let named: Vec<(&str, &str)> = routes.iter().map(|(n, f)| (*n, f.as_str())).collect();
    let mut gw = Gateway::builder(BIN)
        .config_yaml(&config(&up, &named))
        .start();
    let cases: &[(&str, u16, &str)] = &[
        ("a.org:321", 200, "port321"),
        ("a.org", 200, "anyport"),
        ("a.org:80", 200, "anyport"),
        ("c.org:321", 200, "portonly"),
        ("c.org:123", 404, ""),
        ("c.org", 404, ""),
    ];
    for (host, status, route) in cases {
        let got = which(gw.proxy_url("/"), &[("host", host)]).await;
        assert_eq!(got, (*status, route.to_string()), "Host: {host}");
    }
    // Without a port in Host, the listening port is the one a route host's port is compared with.
    let listen = gw.proxy_port();
    let fields = format!("hosts: [\"b.org:{listen}\"]");
    support::reload(&gw, &config(&up, &[("listening", &fields)])).await;
    assert_eq!(
        which(gw.proxy_url("/"), &[("host", "b.org")]).await,
        (200, "listening".into())
    );
    let other = format!("b.org:{}", listen.wrapping_add(1));
    assert_eq!(which(gw.proxy_url("/"), &[("host", &other)]).await.0, 404);
    gw.kill();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn header_names_match_as_nginx_variables() {
    let up = EchoUpstream::start();
    let yaml = config(
        &up,
        &[
            ("lower", "headers: {user_agent: [foo]}"),
            ("upper", "headers: {X_CLIENT_KIND: [\"~*^MOBILE\\\\d$\"]}"),
        ],
    );
    let gw = Gateway::builder(BIN).config_yaml(&yaml).start();
    let cases: &[(Headers, u16, &str)] = &[
        (&[("user-agent", "foo")], 200, "lower"),
        (&[("user-agent", "FOO")], 200, "lower"),
        (&[("user-agent", "foo2")], 404, ""),
        (&[("x-client-kind", "Mobile7")], 200, "upper"),
        (&[("x-client-kind", "mobile")], 404, ""),
    ];
    for (headers, status, route) in cases {
        let got = which(gw.proxy_url("/"), headers).await;
        assert_eq!(got, (*status, route.to_string()), "{headers:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wildcard_route_snis_match_over_tls() {
    let up = EchoUpstream::start();
    let yaml = config(
        &up,
        &[
            ("suffix", "protocols: [https], snis: [\"*.sni.test\"]"),
            ("prefix", "protocols: [https], snis: [\"shop.*\"]"),
        ],
    );
    let gw = Gateway::builder(BIN).config_yaml(&yaml).start();
    let port = gw.proxy_tls_port();
    for (sni, status, route) in [
        ("foo.sni.test", 200, "suffix"),
        ("a.b.sni.test", 200, "suffix"),
        ("shop.example", 200, "prefix"),
        ("sni.test", 404, ""),
        ("other.test", 404, ""),
    ] {
        let resp = https_client(sni, port, true)
            .get(format!("https://{sni}:{port}/x"))
            .send()
            .await
            .expect("https");
        let got_status = resp.status().as_u16();
        let body: Value = resp.json().await.unwrap_or(Value::Null);
        let path = body["path"].as_str().unwrap_or("").trim_start_matches('/');
        let got_route = path.split('/').next().unwrap_or("");
        assert_eq!((got_status, got_route), (status, route), "SNI {sni}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn equal_priority_goes_to_the_larger_route_id() {
    let up = EchoUpstream::start();
    // Listed with the larger id first, then swapped: the id decides, not the order in the file.
    for (method_id, host_id, winner) in [(101, 102, "wildhost"), (102, 101, "method")] {
        let method = format!("id: {}, methods: [GET]", id(method_id));
        let host = format!("id: {}, hosts: [\"domain.*\"]", id(host_id));
        let yaml = config(&up, &[("method", &method), ("wildhost", &host)]);
        let gw = Gateway::builder(BIN).config_yaml(&yaml).start();
        let got = which(gw.proxy_url("/"), &[("host", "domain.com")]).await;
        assert_eq!(got, (200, winner.to_string()), "ids {method_id}/{host_id}");
        let got = which(gw.proxy_url("/"), &[("host", "nothing.com")]).await;
        assert_eq!(got, (200, "method".to_string()));
    }
}

/// Sends `head` on a fresh connection and returns the response (head and body) as text.
fn raw_exchange(port: u16, head: &[u8]) -> String {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.write_all(head).unwrap();
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).unwrap();
    String::from_utf8_lossy(&buf).into_owned()
}

fn status_of(response: &str) -> u16 {
    response
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0)
}

fn get_head(target: &str) -> Vec<u8> {
    let mut head = b"GET ".to_vec();
    head.extend_from_slice(target.as_bytes());
    head.extend_from_slice(b" HTTP/1.1\r\nHost: example.org\r\nConnection: close\r\n\r\n");
    head
}

/// Kong decodes every escape of a non-reserved byte before routing; when the result is not UTF-8 its router
/// errors and the proxy answers 404, whatever the routes (here a catch-all). Escaped UTF-8 is matched
/// decoded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_escaped_path_that_is_not_utf8_gets_404() {
    let up = EchoUpstream::start();
    let yaml = config(&up, &[("all", "paths: [/]"), ("cafe", "paths: [/café]")]);
    let gw = Gateway::builder(BIN).config_yaml(&yaml).start();
    let port = gw.proxy_port();
    let response = raw_exchange(port, &get_head("/%FC%80%80%80%80%AF"));
    assert_eq!(status_of(&response), 404, "{response}");
    assert!(response.contains("no Route matched"), "{response}");
    assert_eq!(status_of(&raw_exchange(port, &get_head("/hello"))), 200);
    let (status, route) = which(gw.proxy_url("/caf%C3%A9/menu"), &[]).await;
    assert_eq!((status, route.as_str()), (200, "cafe"));
}

/// The same path sent as raw bytes: the HTTP/1.1 server takes them (as nginx does) and the router sees the
/// same decoded bytes, so it is the same 404, and a valid path on the same connection kind still routes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_raw_path_that_is_not_utf8_gets_404() {
    let up = EchoUpstream::start();
    let gw = Gateway::builder(BIN)
        .config_yaml(&config(&up, &[("all", "paths: [/]")]))
        .start();
    let raw =
        b"GET /\xfc\x80\x80\x80\x80\xaf HTTP/1.1\r\nHost: example.org\r\nConnection: close\r\n\r\n";
    assert_eq!(status_of(&raw_exchange(gw.proxy_port(), raw)), 404);
    let valid = b"GET /fine HTTP/1.1\r\nHost: example.org\r\nConnection: close\r\n\r\n";
    assert_eq!(status_of(&raw_exchange(gw.proxy_port(), valid)), 200);
}
