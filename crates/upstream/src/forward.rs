//! Header rules between client and upstream: hop-by-hop removal, `X-Forwarded-*`, `X-Real-IP`, `Via`.

use crate::lines::field;
use crate::names;
use http::header::{HeaderMap, HeaderName, HeaderValue};
use http::Version;
pub use sluice_router::bare_host;
use std::net::IpAddr;

// Headers that describe one connection and are never forwarded: the list is the HTTP/1.1 codec's, which
// also classifies response fields by it.
use sluice_h1::HOP_BY_HOP;

/// Removes hop-by-hop headers, including those the `Connection` header names. One pass over the (few)
/// headers first: most messages carry none, and each `remove` hashes its name.
#[inline]
pub fn strip_hop_by_hop(headers: &mut HeaderMap) {
    let present = headers
        .keys()
        .any(|n| *n == http::header::TE || HOP_BY_HOP.contains(n));
    if !present {
        return;
    }
    for name in connection_named(headers) {
        headers.remove(name);
    }
    for name in HOP_BY_HOP {
        headers.remove(name);
    }
    let te_trailers = headers
        .get(http::header::TE)
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"trailers"));
    if !te_trailers {
        headers.remove(http::header::TE);
    }
}

/// Whether `name` is one of the headers that are hop-by-hop whatever `Connection` says (`TE` aside).
#[inline]
pub fn is_hop_by_hop(name: &HeaderName) -> bool {
    HOP_BY_HOP.contains(name)
}

/// Removes the fields the client's `Connection` header names (RFC 9110 §7.6.1: they are meant for this hop
/// only). Runs once, on the client's head as received and right after routing, before any plugin: so the
/// client can drop only its own fields, never one that a plugin or the gateway sets later (the wire writer
/// leaves out only the fixed hop-by-hop names). `Host` and `Content-Length` stay: they frame and address the
/// request rather than describe the connection.
#[inline]
pub fn drop_connection_named(headers: &mut HeaderMap) {
    if !headers.contains_key(http::header::CONNECTION) {
        return;
    }
    for name in connection_named(headers) {
        let framing = name == http::header::HOST || name == http::header::CONTENT_LENGTH;
        if !framing && !is_hop_by_hop(&name) {
            headers.remove(name);
        }
    }
}

/// The headers a message's `Connection` header names (hop-by-hop by declaration); usually none, and then
/// nothing is allocated.
pub fn connection_named(headers: &HeaderMap) -> Vec<HeaderName> {
    let mut named = Vec::new();
    for v in headers.get_all(http::header::CONNECTION) {
        let Ok(text) = v.to_str() else { continue };
        named.extend(
            text.split(',')
                .filter_map(|n| HeaderName::from_bytes(n.trim().as_bytes()).ok()),
        );
    }
    named
}

/// The `X-Forwarded-*` values of one request, by Kong's rule: the client's own values are kept only when
/// the peer is trusted; otherwise they describe this hop.
pub struct Forwarded {
    pub proto: HeaderValue,
    host: Carried,
    pub port: HeaderValue,
    path: Carried,
    /// The prefix `strip_path` removed (when not `/`), or a trusted client's value.
    pub prefix: Option<HeaderValue>,
}

/// A forwarding value: a header value (a trusted client's, or made), or a part of the client's request
/// held as it came and read only when the line is written. Copying the host name and the path into
/// header values of their own cost two allocations per request (~400 instructions).
enum Carried {
    Value(HeaderValue),
    /// The first `len` bytes of the client's `Host`: its name, without the port.
    HostName(HeaderValue, usize),
    /// The path of the client's request target (a clone shares its bytes).
    Path(http::Uri),
}

impl Carried {
    fn as_bytes(&self) -> &[u8] {
        match self {
            Carried::Value(v) => v.as_bytes(),
            Carried::HostName(v, len) => &v.as_bytes()[..*len],
            Carried::Path(uri) => uri.path().as_bytes(),
        }
    }

    fn to_value(&self) -> HeaderValue {
        match self {
            Carried::Value(v) => v.clone(),
            Carried::HostName(..) | Carried::Path(_) => {
                HeaderValue::from_bytes(self.as_bytes()).unwrap_or(HeaderValue::from_static(""))
            }
        }
    }
}

/// What the proxy knows about the downstream side of a request.
pub struct Downstream<'a> {
    pub trusted: bool,
    pub scheme: &'static str,
    /// The listener's port, ready as a header value.
    pub listen_port: &'a HeaderValue,
    /// The Host header (or `:authority`) as the client sent it.
    pub host: Option<&'a HeaderValue>,
    /// The request target as the client sent it (its path is `X-Forwarded-Path`).
    pub uri: &'a http::Uri,
    /// The part of the path `strip_path` removes, if any.
    pub stripped_prefix: Option<&'a str>,
}

impl Forwarded {
    pub fn new(headers: &HeaderMap, d: &Downstream<'_>) -> Forwarded {
        let trusted = |name: HeaderName| d.trusted.then(|| headers.get(name).cloned()).flatten();
        let text = |s: &str| HeaderValue::from_str(s).unwrap_or(HeaderValue::from_static(""));
        Forwarded {
            proto: trusted(names::X_FORWARDED_PROTO).unwrap_or(HeaderValue::from_static(d.scheme)),
            host: match trusted(names::X_FORWARDED_HOST) {
                Some(v) => Carried::Value(v),
                None => host_name(d.host),
            },
            port: trusted(names::X_FORWARDED_PORT).unwrap_or_else(|| d.listen_port.clone()),
            path: match trusted(names::X_FORWARDED_PATH) {
                Some(v) => Carried::Value(v),
                None => Carried::Path(d.uri.clone()),
            },
            prefix: trusted(names::X_FORWARDED_PREFIX).or_else(|| {
                d.stripped_prefix
                    .filter(|p| !p.is_empty() && *p != "/")
                    .map(text)
            }),
        }
    }

    /// `X-Forwarded-Host`.
    pub fn host(&self) -> &[u8] {
        self.host.as_bytes()
    }

    /// `X-Forwarded-Host` and `X-Forwarded-Path` as header values of their own (for a request that is
    /// not written as text: gRPC's).
    pub fn host_and_path(&self) -> (HeaderValue, HeaderValue) {
        (self.host.to_value(), self.path.to_value())
    }

    /// The request came over https, directly or through a trusted proxy.
    pub fn is_https(&self) -> bool {
        self.proto.as_bytes().eq_ignore_ascii_case(b"https")
    }

    /// Writes the `X-Forwarded-*` family, `X-Real-IP` and `Via` lines of the upstream request (the
    /// client's own lines of these names are left out by the caller, see [`replaced`]). `X-Forwarded-For`
    /// and `Via` get this hop appended to the client's values (`[xff, via]`). `peer_text` is the peer's
    /// address as a header value, made once per connection.
    pub fn write(
        self,
        out: &mut Vec<u8>,
        [xff, via]: [&[&HeaderValue]; 2],
        peer: IpAddr,
        peer_text: &HeaderValue,
        client_ip: IpAddr,
        version: Version,
    ) {
        joined_field(out, "x-forwarded-for", xff, peer_text.as_bytes());
        if client_ip == peer {
            field(out, "x-real-ip", peer_text.as_bytes());
        } else {
            field(out, "x-real-ip", client_ip.to_string().as_bytes());
        }
        field(out, "x-forwarded-proto", self.proto.as_bytes());
        field(out, "x-forwarded-host", self.host.as_bytes());
        field(out, "x-forwarded-port", self.port.as_bytes());
        field(out, "x-forwarded-path", self.path.as_bytes());
        if let Some(p) = &self.prefix {
            field(out, "x-forwarded-prefix", p.as_bytes());
        }
        joined_field(out, "via", via, via_token(version).as_bytes());
    }
}

/// nginx's `$host` from the client's `Host`: the name without the port, lowercased. Usually a prefix of the
/// header's value, which is then held instead of copied.
fn host_name(host: Option<&HeaderValue>) -> Carried {
    let Some((value, text)) = host.and_then(|v| Some((v, v.to_str().ok()?))) else {
        return Carried::Value(HeaderValue::from_static(""));
    };
    match bare_host(text) {
        std::borrow::Cow::Borrowed(name) => Carried::HostName(value.clone(), name.len()),
        std::borrow::Cow::Owned(name) => {
            Carried::Value(HeaderValue::from_str(&name).unwrap_or(HeaderValue::from_static("")))
        }
    }
}

/// Whether the upstream request's `name` lines are written by [`Forwarded::write`] instead of copied.
#[inline]
pub fn replaced(name: &str) -> bool {
    matches!(
        name,
        "x-forwarded-for"
            | "x-forwarded-proto"
            | "x-forwarded-host"
            | "x-forwarded-port"
            | "x-forwarded-path"
            | "x-forwarded-prefix"
            | "x-real-ip"
            | "via"
    )
}

/// One `name` line: the client's non-blank values, then `last`, joined with `, `.
fn joined_field(out: &mut Vec<u8>, name: &str, client: &[&HeaderValue], last: &[u8]) {
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b": ");
    for v in client {
        if !v.as_bytes().trim_ascii().is_empty() {
            out.extend_from_slice(v.as_bytes());
            out.extend_from_slice(b", ");
        }
    }
    out.extend_from_slice(last);
    out.extend_from_slice(b"\r\n");
}

/// `<protocol version> sluice/<version>`, as Kong words its `Via` entry.
pub fn via_token(version: Version) -> &'static str {
    match version {
        Version::HTTP_09 => concat!("0.9 sluice/", env!("CARGO_PKG_VERSION")),
        Version::HTTP_10 => concat!("1.0 sluice/", env!("CARGO_PKG_VERSION")),
        Version::HTTP_2 => concat!("2 sluice/", env!("CARGO_PKG_VERSION")),
        Version::HTTP_3 => concat!("3 sluice/", env!("CARGO_PKG_VERSION")),
        _ => concat!("1.1 sluice/", env!("CARGO_PKG_VERSION")),
    }
}

/// Every value of `name` joined with `, `, then `last`.
pub fn appended(headers: &HeaderMap, name: HeaderName, last: &str) -> HeaderValue {
    let mut out = String::new();
    for v in headers.get_all(name).iter().filter_map(|v| v.to_str().ok()) {
        if !v.trim().is_empty() {
            out.push_str(v);
            out.push_str(", ");
        }
    }
    out.push_str(last);
    HeaderValue::from_str(&out).unwrap_or(HeaderValue::from_static(""))
}

#[cfg(test)]
mod tests;
