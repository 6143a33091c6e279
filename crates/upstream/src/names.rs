//! Header names of the forwarding rules, as constants: inserting or comparing by `&str` would parse and
//! validate the name on every request.

use http::HeaderName;

pub const X_FORWARDED_FOR: HeaderName = HeaderName::from_static("x-forwarded-for");
pub const X_REAL_IP: HeaderName = HeaderName::from_static("x-real-ip");
pub const X_FORWARDED_PROTO: HeaderName = HeaderName::from_static("x-forwarded-proto");
pub const X_FORWARDED_HOST: HeaderName = HeaderName::from_static("x-forwarded-host");
pub const X_FORWARDED_PORT: HeaderName = HeaderName::from_static("x-forwarded-port");
pub const X_FORWARDED_PATH: HeaderName = HeaderName::from_static("x-forwarded-path");
pub const X_FORWARDED_PREFIX: HeaderName = HeaderName::from_static("x-forwarded-prefix");
