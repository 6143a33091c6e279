//! The headers Kong adds to responses: on proxied responses (`Via`, latencies, `Server` when the upstream
//! sent none, request id) and on responses the gateway made itself (response latency, `Server`, request id).

use crate::names;
use crate::settings::HeaderSettings;
use crate::PRODUCT;
use http::header::{HeaderMap, HeaderValue, SERVER, VIA};
use sluice_plugins::header_number;
use sluice_upstream::forward;
use std::time::{Duration, Instant};

/// Latencies of a proxied request.
#[derive(Debug, Clone, Copy)]
pub struct Timings {
    /// Time spent in the gateway before the upstream was contacted (`X-Kong-Proxy-Latency`).
    pub proxy: Duration,
    /// From sending to the upstream until its response head (`X-Kong-Upstream-Latency`).
    pub upstream: Duration,
}

fn ms(d: Duration) -> HeaderValue {
    header_number(d.as_millis() as u64)
}

fn request_id_value(request_id: &str) -> HeaderValue {
    HeaderValue::from_str(request_id).unwrap_or(HeaderValue::from_static(""))
}

/// Decorates an upstream's response head: hop-by-hop headers removed, then Kong's gateway headers.
pub fn upstream_response(
    head: &mut http::response::Parts,
    h: HeaderSettings,
    request_id: &str,
    t: Timings,
) {
    forward::strip_hop_by_hop(&mut head.headers);
    let status = head.status.as_u16();
    let headers = &mut head.headers;
    if h.upstream_latency {
        headers.insert(names::X_KONG_UPSTREAM_LATENCY, ms(t.upstream));
    }
    if h.proxy_latency {
        headers.insert(names::X_KONG_PROXY_LATENCY, ms(t.proxy));
    }
    if h.via {
        let token = forward::via_token(http::Version::HTTP_11);
        let via = match headers.contains_key(VIA) {
            true => forward::appended(headers, VIA, token),
            false => HeaderValue::from_static(token),
        };
        headers.insert(VIA, via);
    }
    if h.server && !headers.contains_key(SERVER) {
        headers.insert(SERVER, HeaderValue::from_static(PRODUCT));
    }
    if h.request_id {
        headers.insert(names::X_KONG_REQUEST_ID, request_id_value(request_id));
    }
    if h.upstream_status {
        headers.insert(
            names::X_KONG_UPSTREAM_STATUS,
            header_number(u64::from(status)),
        );
    }
}

/// Decorates a response the gateway made itself (an error or a plugin's answer).
pub fn gateway_response(
    headers: &mut HeaderMap,
    h: HeaderSettings,
    request_id: &str,
    started: Instant,
) {
    if h.response_latency {
        headers.insert(names::X_KONG_RESPONSE_LATENCY, ms(started.elapsed()));
    }
    if h.server {
        headers.insert(SERVER, HeaderValue::from_static(PRODUCT));
    } else {
        headers.remove(SERVER);
    }
    if h.request_id {
        headers.insert(names::X_KONG_REQUEST_ID, request_id_value(request_id));
    }
}
