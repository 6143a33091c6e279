//! Header names the proxy sets on responses, as constants: inserting by `&str` would parse and validate
//! the name on every request. Those of the forwarding rules are `sluice_upstream::names`.
//!
//! Each is declared once, from one literal, with how its HTTP/1.1 line starts: the fast path's writer
//! appends Kong's headers as text (`crate::respond::KongHeaders::write`), and a copy per part of a line is
//! most of what writing it costs; the same goes for a log record's copy of them
//! (`crate::respond::KongHeaders::log_members`).

use http::HeaderName;

/// A header name, the start of its HTTP/1.1 field line (`name: `), and the start of its member in a log
/// record's JSON object of response headers (`,"name":"`: the comma before it and the value's opening
/// quote too, so that a member is three copies).
pub struct Name {
    pub name: HeaderName,
    pub line: &'static str,
    pub json: &'static str,
}

macro_rules! name {
    ($text:literal) => {
        Name {
            name: HeaderName::from_static($text),
            line: concat!($text, ": "),
            json: concat!(",\"", $text, "\":\""),
        }
    };
}

pub const X_KONG_REQUEST_ID: Name = name!("x-kong-request-id");
pub const X_KONG_UPSTREAM_LATENCY: Name = name!("x-kong-upstream-latency");
pub const X_KONG_PROXY_LATENCY: Name = name!("x-kong-proxy-latency");
pub const X_KONG_RESPONSE_LATENCY: Name = name!("x-kong-response-latency");
pub const X_KONG_UPSTREAM_STATUS: Name = name!("x-kong-upstream-status");
pub const VIA: Name = name!("via");
pub const SERVER: Name = name!("server");
