//! Header names the proxy sets, as constants: inserting by `&str` would parse and validate the name on
//! every request.

use http::HeaderName;

pub const X_FORWARDED_PROTO: HeaderName = HeaderName::from_static("x-forwarded-proto");
pub const X_FORWARDED_HOST: HeaderName = HeaderName::from_static("x-forwarded-host");
pub const X_FORWARDED_PORT: HeaderName = HeaderName::from_static("x-forwarded-port");
pub const X_FORWARDED_PATH: HeaderName = HeaderName::from_static("x-forwarded-path");
pub const X_FORWARDED_PREFIX: HeaderName = HeaderName::from_static("x-forwarded-prefix");
pub const X_KONG_REQUEST_ID: HeaderName = HeaderName::from_static("x-kong-request-id");
pub const X_KONG_UPSTREAM_LATENCY: HeaderName = HeaderName::from_static("x-kong-upstream-latency");
pub const X_KONG_PROXY_LATENCY: HeaderName = HeaderName::from_static("x-kong-proxy-latency");
pub const X_KONG_RESPONSE_LATENCY: HeaderName = HeaderName::from_static("x-kong-response-latency");
pub const X_KONG_UPSTREAM_STATUS: HeaderName = HeaderName::from_static("x-kong-upstream-status");
pub const KEEP_ALIVE: HeaderName = HeaderName::from_static("keep-alive");
pub const PROXY_CONNECTION: HeaderName = HeaderName::from_static("proxy-connection");
