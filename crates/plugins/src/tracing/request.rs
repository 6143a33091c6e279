//! What both tracing plugins read from a finished request: wall-clock times of its moments, its host, and
//! the upstream host name its balancer tries went to.

use crate::ctx::RequestCtx;
use std::borrow::Cow;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// The wall-clock time of `at`, a moment of this request (the context keeps one wall-clock reading, at
/// its start; later moments are monotonic instants).
pub fn wall(ctx: &RequestCtx<'_>, at: Instant) -> SystemTime {
    ctx.started_wall + at.saturating_duration_since(ctx.started)
}

/// Nanoseconds since the Unix epoch.
pub fn unix_ns(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// nginx's `$host`: the request's host without its port, lower-cased.
pub fn host<'c>(ctx: &'c RequestCtx<'_>) -> Cow<'c, str> {
    sluice_router::bare_host(crate::logging::serialize::raw_host(&ctx.request))
}

/// `HTTP/1.1`-style version number: `1.0`, `1.1`, `2.0`.
pub fn http_version(ctx: &RequestCtx<'_>) -> &'static str {
    match ctx.request.version {
        http::Version::HTTP_10 => "1.0",
        http::Version::HTTP_2 => "2.0",
        http::Version::HTTP_3 => "3.0",
        _ => "1.1",
    }
}

/// The host name the balancer resolved (Kong's `balancer_data.hostname`): the service's host.
pub fn upstream_host<'c>(ctx: &'c RequestCtx<'_>) -> Option<&'c str> {
    ctx.service.map(|s| s.host.as_str())
}
