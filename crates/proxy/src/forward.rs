//! Header rules between client and upstream: hop-by-hop removal, `X-Forwarded-*`, `X-Real-IP`, `Via`.

use http::header::{HeaderMap, HeaderName, HeaderValue};
use std::net::IpAddr;

/// Headers that describe one connection, never forwarded (RFC 9110 §7.6.1, plus the common non-standard ones).
const HOP_BY_HOP: [&str; 8] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "proxy-authenticate",
];

/// Removes hop-by-hop headers, including those named in `Connection`.
pub fn strip_hop_by_hop(headers: &mut HeaderMap) {
    let named: Vec<HeaderName> = headers
        .get_all(http::header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|n| HeaderName::from_bytes(n.trim().as_bytes()).ok())
        .collect();
    for name in named {
        headers.remove(name);
    }
    for name in HOP_BY_HOP {
        headers.remove(name);
    }
}

/// What the proxy knows about the downstream side of a request.
pub struct Downstream<'a> {
    pub peer: IpAddr,
    pub trusted: bool,
    pub scheme: &'static str,
    pub listen_port: u16,
    /// The Host header as the client sent it.
    pub host: &'a str,
    pub path: &'a str,
    /// The prefix strip_path removed, if any.
    pub stripped_prefix: Option<&'a str>,
}

fn set(headers: &mut HeaderMap, name: &'static str, value: &str) {
    if let Ok(v) = HeaderValue::from_str(value) {
        headers.insert(name, v);
    }
}

/// The client address as seen through trusted proxies: the last untrusted hop of `X-Forwarded-For`.
pub fn client_ip(headers: &HeaderMap, peer: IpAddr, trusted: &dyn Fn(IpAddr) -> bool) -> IpAddr {
    if !trusted(peer) {
        return peer;
    }
    let Some(xff) = headers.get("x-forwarded-for").and_then(|v| v.to_str().ok()) else {
        return peer;
    };
    xff.rsplit(',')
        .filter_map(|s| s.trim().parse::<IpAddr>().ok())
        .find(|ip| !trusted(*ip))
        .unwrap_or(peer)
}

/// Sets the `X-Forwarded-*` family and `X-Real-IP` on the upstream request, trusting the client's own values
/// only when the peer is in `trusted_ips` (Kong's rule). `X-Forwarded-For` always gets the peer appended.
pub fn add_forwarded(headers: &mut HeaderMap, d: &Downstream<'_>, client_ip: IpAddr) {
    let peer = d.peer.to_string();
    let xff = match headers.get("x-forwarded-for").and_then(|v| v.to_str().ok()) {
        Some(prev) if !prev.is_empty() => format!("{prev}, {peer}"),
        _ => peer,
    };
    set(headers, "x-forwarded-for", &xff);
    set(headers, "x-real-ip", &client_ip.to_string());
    let keep = |headers: &HeaderMap, name: &str| d.trusted && headers.contains_key(name);
    if !keep(headers, "x-forwarded-proto") {
        set(headers, "x-forwarded-proto", d.scheme);
    }
    if !keep(headers, "x-forwarded-host") {
        let host = match d.host.rsplit_once(':') {
            Some((h, p)) if p.parse::<u16>().is_ok() && !h.ends_with(':') => h,
            _ => d.host,
        };
        set(headers, "x-forwarded-host", host);
    }
    if !keep(headers, "x-forwarded-port") {
        set(headers, "x-forwarded-port", &d.listen_port.to_string());
    }
    if !keep(headers, "x-forwarded-path") {
        set(headers, "x-forwarded-path", d.path);
    }
    if !keep(headers, "x-forwarded-prefix") {
        match d.stripped_prefix.filter(|p| !p.is_empty() && *p != "/") {
            Some(prefix) => set(headers, "x-forwarded-prefix", prefix),
            None => {
                headers.remove("x-forwarded-prefix");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn downstream(trusted: bool) -> Downstream<'static> {
        Downstream {
            peer: "10.0.0.9".parse().unwrap(),
            trusted,
            scheme: "http",
            listen_port: 8000,
            host: "api.example.com:8000",
            path: "/api/x",
            stripped_prefix: Some("/api"),
        }
    }

    #[test]
    fn untrusted_peers_cannot_forge_forwarded_headers() {
        let mut h = HeaderMap::new();
        h.insert("x-forwarded-for", "1.1.1.1".parse().unwrap());
        h.insert("x-forwarded-proto", "https".parse().unwrap());
        h.insert("x-forwarded-prefix", "/evil".parse().unwrap());
        add_forwarded(&mut h, &downstream(false), "10.0.0.9".parse().unwrap());
        assert_eq!(h["x-forwarded-for"], "1.1.1.1, 10.0.0.9");
        assert_eq!(h["x-forwarded-proto"], "http");
        assert_eq!(h["x-forwarded-host"], "api.example.com");
        assert_eq!(h["x-forwarded-port"], "8000");
        assert_eq!(h["x-forwarded-path"], "/api/x");
        assert_eq!(h["x-forwarded-prefix"], "/api");
        assert_eq!(h["x-real-ip"], "10.0.0.9");
        let mut t = HeaderMap::new();
        t.insert("x-forwarded-proto", "https".parse().unwrap());
        add_forwarded(&mut t, &downstream(true), "1.1.1.1".parse().unwrap());
        assert_eq!(t["x-forwarded-proto"], "https");
        assert_eq!(t["x-real-ip"], "1.1.1.1");
    }

    #[test]
    fn client_ip_walks_trusted_hops() {
        let mut h = HeaderMap::new();
        h.insert("x-forwarded-for", "7.7.7.7, 10.0.0.2".parse().unwrap());
        let trusted = |ip: IpAddr| ip.to_string().starts_with("10.");
        assert_eq!(
            client_ip(&h, "10.0.0.1".parse().unwrap(), &trusted),
            "7.7.7.7".parse::<IpAddr>().unwrap()
        );
        assert_eq!(
            client_ip(&h, "8.8.8.8".parse().unwrap(), &trusted),
            "8.8.8.8".parse::<IpAddr>().unwrap()
        );
    }

    #[test]
    fn hop_by_hop_headers_go() {
        let mut h = HeaderMap::new();
        h.insert("connection", "keep-alive, x-private".parse().unwrap());
        h.insert("x-private", "1".parse().unwrap());
        h.insert("keep-alive", "timeout=5".parse().unwrap());
        h.insert("te", "trailers".parse().unwrap());
        h.insert("x-keep", "1".parse().unwrap());
        strip_hop_by_hop(&mut h);
        assert_eq!(h.len(), 1);
        assert!(h.contains_key("x-keep"));
    }
}
