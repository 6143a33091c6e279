//! `request-size-limiting` (priority 951, access): refuses request bodies over `allowed_payload_size`
//! (`size_unit`: megabytes, kilobytes or bytes) with Kong's 413, or 417 when the client sent
//! `Expect: 100-continue`.
//!
//! A `Content-Length` is checked at once. A body without one (chunked, or HTTP/2 without a length) is
//! counted while the proxy streams it upstream: the handler sets [`RequestCtx::body_limit`], the proxy
//! wraps the body, and once it passes the limit the upstream request is abandoned and the client gets the
//! same answer; the body is never held whole in memory. A body some other plugin had buffered is measured
//! as it is. `require_content_length` refuses requests without a length that are not chunked (411).

#[cfg(test)]
mod tests;

use crate::ctx::{BodyLimit, RequestCtx};
use crate::plugin::{Flow, Plugin, Registered};
use crate::registry::{typed_config, BuildCtx, Builtin};
use crate::response::PluginResponse;
use http::{HeaderMap, StatusCode};
use serde::Deserialize;
use sluice_model::schema::{Field, Schema};
use std::sync::Arc;

const UNITS: &[&str] = &["megabytes", "kilobytes", "bytes"];

#[derive(Debug, Deserialize)]
struct Config {
    allowed_payload_size: Option<i64>,
    size_unit: Unit,
    require_content_length: bool,
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Unit {
    Megabytes,
    Kilobytes,
    Bytes,
}

impl Unit {
    fn factor(self) -> i128 {
        match self {
            Unit::Megabytes => 1 << 20,
            Unit::Kilobytes => 1 << 10,
            Unit::Bytes => 1,
        }
    }
}

pub fn builtin() -> Builtin {
    let config = Schema::new(vec![
        ("allowed_payload_size", Field::integer().default(128)),
        (
            "size_unit",
            Field::string()
                .required()
                .default("megabytes")
                .one_of(UNITS),
        ),
        ("require_content_length", Field::boolean().default(false)),
    ]);
    Builtin::new("request-size-limiting", 951, config, build)
}

fn build(_: &BuildCtx<'_>, entity: &sluice_model::Plugin) -> Result<Arc<dyn Plugin>, String> {
    let c: Config = typed_config(entity)?;
    let allowed = i128::from(c.allowed_payload_size.unwrap_or(128)) * c.size_unit.factor();
    Ok(register(SizeLimit {
        // A negative size refuses every body, even an empty one (its length exceeds it).
        allowed: u64::try_from(allowed).ok(),
        require_content_length: c.require_content_length,
    }))
}

struct SizeLimit {
    /// The limit in bytes; None when negative.
    allowed: Option<u64>,
    require_content_length: bool,
}

/// Kong's answer to a body over the limit: 417 when the client waits for `100 Continue`, else 413.
pub fn exceeded(headers: &HeaderMap) -> PluginResponse {
    let expects = headers
        .get(http::header::EXPECT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("100-continue"));
    let status = match expects {
        true => StatusCode::EXPECTATION_FAILED,
        false => StatusCode::PAYLOAD_TOO_LARGE,
    };
    PluginResponse::message(status, "Request size limit exceeded")
}

impl SizeLimit {
    fn within(&self, length: u64) -> bool {
        self.allowed.is_some_and(|a| length <= a)
    }

    fn check(&self, ctx: &RequestCtx<'_>, length: u64) -> Flow {
        match self.within(length) {
            true => Flow::Continue,
            false => Flow::Respond(exceeded(&ctx.request.headers)),
        }
    }

    fn access(&self, ctx: &mut RequestCtx<'_>) -> Flow {
        let headers = &ctx.request.headers;
        let length = headers
            .get(http::header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok());
        if let Some(length) = length {
            return self.check(ctx, length);
        }
        let chunked = headers
            .get(http::header::TRANSFER_ENCODING)
            .is_some_and(|v| v == "chunked");
        if self.require_content_length && !chunked {
            return Flow::Respond(PluginResponse::message(
                StatusCode::LENGTH_REQUIRED,
                "A valid Content-Length header is required",
            ));
        }
        if let Some(body) = &ctx.body {
            return self.check(ctx, body.len() as u64);
        }
        match self.allowed {
            Some(bytes) => {
                ctx.body_limit = Some(BodyLimit { bytes, exceeded });
                Flow::Continue
            }
            None => Flow::Respond(exceeded(&ctx.request.headers)),
        }
    }
}

/// This plugin's phases: each handler is registered here, next to where it is implemented.
fn register(plugin: SizeLimit) -> Arc<dyn Plugin> {
    Registered::new("request-size-limiting", plugin)
        .access(SizeLimit::access)
        .build()
}
