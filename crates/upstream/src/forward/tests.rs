//! Tests of the forwarding rules: hop-by-hop removal, `X-Forwarded-*` trust, `Via`.

use super::*;
use crate::wire::tests::sent;

static PORT: HeaderValue = HeaderValue::from_static("8000");
static HOST: HeaderValue = HeaderValue::from_static("API.example.com:8000");

fn downstream(trusted: bool) -> Downstream<'static> {
    static URI: std::sync::LazyLock<http::Uri> =
        std::sync::LazyLock::new(|| http::Uri::from_static("/api/x?q=1"));
    Downstream {
        trusted,
        scheme: "http",
        listen_port: &PORT,
        host: Some(&HOST),
        uri: &URI,
        stripped_prefix: Some("/api"),
    }
}

fn client_headers() -> HeaderMap {
    let mut h = HeaderMap::new();
    for (k, v) in [
        ("x-forwarded-for", "1.1.1.1"),
        ("x-forwarded-proto", "https"),
        ("x-forwarded-host", "edge.example"),
        ("x-forwarded-port", "443"),
        ("x-forwarded-path", "/edge"),
        ("x-forwarded-prefix", "/evil"),
        ("via", "1.1 edge"),
    ] {
        h.insert(k, v.parse().unwrap());
    }
    h
}

/// Without a client `X-Forwarded-For`, the peer alone is sent.
#[test]
fn the_peer_alone_without_a_client_forwarded_for() {
    let h = HeaderMap::new();
    let f = Forwarded::new(&h, &downstream(false));
    let peer: IpAddr = "10.0.0.9".parse().unwrap();
    let h = sent(&h, f, peer, peer, Version::HTTP_11);
    assert_eq!(h["x-forwarded-for"], "10.0.0.9");
    assert_eq!(h["x-real-ip"], "10.0.0.9");
}

#[test]
fn untrusted_peers_cannot_forge_forwarded_headers() {
    let h = client_headers();
    let f = Forwarded::new(&h, &downstream(false));
    assert!(!f.is_https());
    let peer: IpAddr = "10.0.0.9".parse().unwrap();
    let h = sent(&h, f, peer, peer, Version::HTTP_11);
    assert_eq!(h["x-forwarded-for"], "1.1.1.1, 10.0.0.9");
    assert_eq!(h.get_all("x-forwarded-for").iter().count(), 1);
    assert_eq!(h.get_all("via").iter().count(), 1);
    assert_eq!(h["x-forwarded-proto"], "http");
    assert_eq!(h["x-forwarded-host"], "api.example.com");
    assert_eq!(h["x-forwarded-port"], "8000");
    assert_eq!(h["x-forwarded-path"], "/api/x");
    assert_eq!(h["x-forwarded-prefix"], "/api");
    assert_eq!(h["x-real-ip"], "10.0.0.9");
    assert_eq!(
        h["via"],
        format!(
            "1.1 edge, 1.1 {}",
            concat!("sluice/", env!("CARGO_PKG_VERSION"))
        )
    );
}

#[test]
fn trusted_peers_keep_their_values() {
    let h = client_headers();
    let f = Forwarded::new(&h, &downstream(true));
    assert!(f.is_https());
    let peer: IpAddr = "10.0.0.9".parse().unwrap();
    let h = sent(&h, f, peer, "1.1.1.1".parse().unwrap(), Version::HTTP_2);
    assert_eq!(h["x-forwarded-proto"], "https");
    assert_eq!(h["x-forwarded-host"], "edge.example");
    assert_eq!(h["x-forwarded-port"], "443");
    assert_eq!(h["x-forwarded-path"], "/edge");
    assert_eq!(h["x-forwarded-prefix"], "/evil");
    assert_eq!(h["x-real-ip"], "1.1.1.1");
    assert!(h["via"].to_str().unwrap().ends_with(&format!(
        ", 2 {}",
        concat!("sluice/", env!("CARGO_PKG_VERSION"))
    )));
}

#[test]
fn no_prefix_header_without_a_stripped_prefix() {
    let h = client_headers();
    let d = Downstream {
        stripped_prefix: Some("/"),
        ..downstream(false)
    };
    let peer: IpAddr = [127, 0, 0, 1].into();
    let h = sent(&h, Forwarded::new(&h, &d), peer, peer, Version::HTTP_11);
    assert!(!h.contains_key("x-forwarded-prefix"));
}

#[test]
fn hop_by_hop_headers_go() {
    let mut h = HeaderMap::new();
    h.insert("connection", "keep-alive, x-private".parse().unwrap());
    h.insert("x-private", "1".parse().unwrap());
    h.insert("keep-alive", "timeout=5".parse().unwrap());
    h.insert("te", "gzip".parse().unwrap());
    h.insert("upgrade", "h2c".parse().unwrap());
    h.insert("x-keep", "1".parse().unwrap());
    strip_hop_by_hop(&mut h);
    assert_eq!(h.len(), 1, "{h:?}");
    assert!(h.contains_key("x-keep"));
    h.insert("te", "trailers".parse().unwrap());
    strip_hop_by_hop(&mut h);
    assert!(h.contains_key("te"));
}

/// `X-Forwarded-Host` is the client's `Host` without its port (nginx's `$host`), and `X-Forwarded-Path`
/// the target's path without its query, whether the name is held from the header or made lowercase.
#[test]
fn the_forwarded_host_is_the_clients_host_name_and_the_path_has_no_query() {
    for (host, name) in [
        ("api.example.com:8000", "api.example.com"),
        ("api.example.com", "api.example.com"),
        ("Api.Example.com:8000", "api.example.com"),
        ("[::1]:8000", "[::1]"),
    ] {
        let mut h = HeaderMap::new();
        h.insert(http::header::HOST, host.parse().unwrap());
        let d = Downstream {
            host: h.get(http::header::HOST),
            ..downstream(false)
        };
        let f = Forwarded::new(&h, &d);
        assert_eq!(f.host(), name.as_bytes());
        let (value, path) = f.host_and_path();
        assert_eq!(value, name);
        assert_eq!(path, "/api/x");
        let peer: IpAddr = [127, 0, 0, 1].into();
        let sent = sent(&h, f, peer, peer, Version::HTTP_11);
        assert_eq!(sent["x-forwarded-host"], name);
        assert_eq!(sent["x-forwarded-path"], "/api/x");
    }
}
