//! Tests of the upstream request as written: header lines, framing, forwarding headers; helpers for
//! the forwarding tests.

use super::*;
use crate::body::full;
use bytes::Bytes;
use http::header::HeaderName;
use http::HeaderMap;

/// The header lines of a written head, in order, as (name, value) text.
pub(crate) fn lines(head: &[u8]) -> Vec<(String, String)> {
    let text = std::str::from_utf8(head).unwrap();
    assert!(text.ends_with("\r\n\r\n"), "{text:?}");
    text.trim_end()
        .split("\r\n")
        .skip(1)
        .map(|l| {
            let (n, v) = l.split_once(": ").unwrap();
            (n.to_string(), v.to_string())
        })
        .collect()
}

/// The upstream request's headers for `headers` sent by `peer`, with `host` for the try.
pub(crate) fn sent(
    headers: &HeaderMap,
    forwarded: Forwarded,
    peer: IpAddr,
    client_ip: IpAddr,
    version: Version,
) -> HeaderMap {
    let text = HeaderValue::from_str(&peer.to_string()).unwrap();
    let wire = write(
        headers,
        Method::GET,
        full(Bytes::new()),
        forwarded,
        &text,
        peer,
        client_ip,
        version,
    );
    let mut out = BytesMut::new();
    wire.head(b"upstream", &mut out);
    let mut map = HeaderMap::new();
    for (n, v) in lines(&out) {
        map.append(
            HeaderName::from_bytes(n.as_bytes()).unwrap(),
            v.parse().unwrap(),
        );
    }
    map
}

#[allow(clippy::too_many_arguments)]
fn write(
    headers: &HeaderMap,
    method: Method,
    body: ProxyBody,
    forwarded: Forwarded,
    peer_text: &HeaderValue,
    peer: IpAddr,
    client_ip: IpAddr,
    version: Version,
) -> WireRequest {
    let mut req = http::Request::new(());
    *req.method_mut() = method;
    *req.headers_mut() = headers.clone();
    let (parts, ()) = req.into_parts();
    let d = HopFacts {
        forwarded,
        peer,
        peer_text,
        client_ip,
        version,
        request_id: Some("req-1"),
    };
    WireRequest::new(&parts, "/a%20b?q=1", body, d)
}

fn forwarded() -> Forwarded {
    let port = HeaderValue::from_static("8000");
    let host = HeaderValue::from_static("api");
    let uri = http::Uri::from_static("/a");
    let d = forward::Downstream {
        trusted: false,
        scheme: "http",
        listen_port: &port,
        host: Some(&host),
        uri: &uri,
        stripped_prefix: None,
    };
    Forwarded::new(&HeaderMap::new(), &d)
}

pub(crate) fn simple(
    headers: &HeaderMap,
    method: Method,
    body: ProxyBody,
) -> (WireRequest, Vec<(String, String)>) {
    let peer: IpAddr = [127, 0, 0, 1].into();
    let text = HeaderValue::from_static("127.0.0.1");
    let wire = write(
        headers,
        method,
        body,
        forwarded(),
        &text,
        peer,
        peer,
        Version::HTTP_11,
    );
    let mut out = BytesMut::new();
    wire.head(b"example.com:8080", &mut out);
    assert!(
        out.starts_with(b"POST /a%20b?q=1 HTTP/1.1\r\nhost: example.com:8080\r\n")
            || out.starts_with(b"GET /a%20b?q=1 HTTP/1.1\r\nhost: example.com:8080\r\n"),
        "{out:?}"
    );
    let l = lines(&out);
    (wire, l)
}

fn names(lines: &[(String, String)]) -> Vec<&str> {
    lines.iter().map(|(n, _)| n.as_str()).collect()
}

#[test]
fn hop_by_hop_headers_and_the_clients_host_are_left_out() {
    let mut h = HeaderMap::new();
    for (k, v) in [
        ("host", "client.example"),
        ("connection", "keep-alive, x-private"),
        ("x-private", "1"),
        ("content-length", "0"),
        ("keep-alive", "timeout=5"),
        ("proxy-connection", "keep-alive"),
        ("te", "gzip"),
        ("upgrade", "h2c"),
        ("transfer-encoding", "chunked"),
        ("x-keep", "1"),
        ("x-kong-request-id", "forged"),
    ] {
        h.append(k, v.parse().unwrap());
    }
    crate::forward::drop_connection_named(&mut h);
    let (wire, l) = simple(&h, Method::GET, full(Bytes::new()));
    assert_eq!(
        names(&l),
        [
            "host",
            "content-length",
            "x-keep",
            "x-forwarded-for",
            "x-real-ip",
            "x-forwarded-proto",
            "x-forwarded-host",
            "x-forwarded-port",
            "x-forwarded-path",
            "via",
            "x-kong-request-id"
        ]
    );
    assert_eq!(l.last().unwrap().1, "req-1");
    assert_eq!(wire.client_host.as_ref().unwrap(), "client.example");
    assert_eq!(wire.target(), "/a%20b?q=1");
    assert!(wire.bodyless());
}

/// The client's `Connection` can drop only the client's own fields: a field a plugin sets afterwards
/// (an auth plugin's `X-Anonymous-Consumer`, say) reaches the upstream even when the client named it.
#[test]
fn a_field_set_after_the_client_named_it_is_sent() {
    let mut h = HeaderMap::new();
    h.insert(
        "connection",
        "x-anonymous-consumer, x-consumer-id".parse().unwrap(),
    );
    h.insert("x-consumer-id", "forged".parse().unwrap());
    crate::forward::drop_connection_named(&mut h);
    assert!(h.get("x-consumer-id").is_none());
    h.insert("x-anonymous-consumer", "true".parse().unwrap());
    let (_, l) = simple(&h, Method::GET, full(Bytes::new()));
    assert!(
        l.contains(&("x-anonymous-consumer".into(), "true".into())),
        "{l:?}"
    );
    assert!(!names(&l).contains(&"x-consumer-id"));
}

#[test]
fn te_trailers_is_kept() {
    let mut h = HeaderMap::new();
    h.insert("te", "trailers".parse().unwrap());
    let (_, l) = simple(&h, Method::GET, full(Bytes::new()));
    assert!(l.contains(&("te".into(), "trailers".into())));
}

#[test]
fn body_framing() {
    // An empty POST says so; an empty GET says nothing.
    let (w, l) = simple(&HeaderMap::new(), Method::POST, full(Bytes::new()));
    assert!(l.contains(&("content-length".into(), "0".into())) && w.bodyless());
    let (_, l) = simple(&HeaderMap::new(), Method::GET, full(Bytes::new()));
    assert!(!names(&l).contains(&"content-length"));
    // A body of known size gets its length; the client's own length is kept as sent.
    let (w, l) = simple(&HeaderMap::new(), Method::POST, full(Bytes::from("abc")));
    assert!(l.contains(&("content-length".into(), "3".into())) && !w.chunked && !w.bodyless());
    let mut h = HeaderMap::new();
    h.insert("content-length", "3".parse().unwrap());
    let (_, l) = simple(&h, Method::POST, full(Bytes::from("abc")));
    assert_eq!(
        names(&l).iter().filter(|n| **n == "content-length").count(),
        1
    );
    // A body of unknown size is chunked.
    let (tx, channel) = crate::body::ChannelBody::channel();
    let (w, l) = simple(
        &HeaderMap::new(),
        Method::POST,
        http_body_util::BodyExt::boxed(channel),
    );
    drop(tx);
    assert!(l.contains(&("transfer-encoding".into(), "chunked".into())) && w.chunked);
}

#[test]
fn a_websocket_upgrade_carries_kongs_lines_instead_of_the_clients() {
    let mut h = HeaderMap::new();
    for (k, v) in [
        ("connection", "Upgrade"),
        ("upgrade", "WebSocket"),
        ("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ=="),
        ("sec-websocket-version", "13"),
    ] {
        h.append(k, v.parse().unwrap());
    }
    let (mut wire, plain) = simple(&h, Method::GET, full(Bytes::new()));
    assert!(!names(&plain).contains(&"upgrade") && !names(&plain).contains(&"connection"));
    assert!(!wire.is_upgrade());
    wire.upgrade_websocket();
    assert!(wire.is_upgrade());
    let mut out = BytesMut::new();
    wire.head(b"example.com:8080", &mut out);
    let l = lines(&out);
    let value = |name: &str| l.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str());
    assert_eq!(value("connection"), Some("keep-alive, Upgrade"));
    assert_eq!(value("upgrade"), Some("websocket"));
    assert_eq!(value("sec-websocket-key"), Some("dGhlIHNhbXBsZSBub25jZQ=="));
    assert_eq!(value("sec-websocket-version"), Some("13"));
    assert_eq!(l.iter().filter(|(n, _)| n == "upgrade").count(), 1);
}
