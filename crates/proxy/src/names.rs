//! Header names the proxy sets on responses, as constants: inserting by `&str` would parse and validate
//! the name on every request. Those of the forwarding rules are `sluice_upstream::names`.

use http::HeaderName;

pub const X_KONG_REQUEST_ID: HeaderName = HeaderName::from_static("x-kong-request-id");
pub const X_KONG_UPSTREAM_LATENCY: HeaderName = HeaderName::from_static("x-kong-upstream-latency");
pub const X_KONG_PROXY_LATENCY: HeaderName = HeaderName::from_static("x-kong-proxy-latency");
pub const X_KONG_RESPONSE_LATENCY: HeaderName = HeaderName::from_static("x-kong-response-latency");
pub const X_KONG_UPSTREAM_STATUS: HeaderName = HeaderName::from_static("x-kong-upstream-status");
