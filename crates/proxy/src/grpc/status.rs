//! Kong's gRPC answers: how a response the gateway or a plugin makes is turned into a gRPC status for a
//! gRPC request (`Content-Type: application/grpc…`). The HTTP status stays; the answer becomes
//! headers-only (`Content-Length: 0`) with `grpc-status` mapped from the HTTP status and `grpc-message`.
//!
//! Two shapes, as Kong makes them: an answer made by `kong.response.error` (no route, no peer, a
//! plugin's 401 or 429) has `Content-Type: application/grpc` and the status's name as its message
//! (`NotFound`, `Unauthenticated`); an error made by nginx and rendered by Kong's error handler (502,
//! 504, 500) has no `Content-Type` and Kong's error sentence as its message.

use crate::error::ProxyError;
use bytes::Bytes;
use http::header::{HeaderMap, HeaderValue, CONTENT_LENGTH, CONTENT_TYPE};
use http::{Response, StatusCode};
use sluice_plugins::PluginResponse;

pub const GRPC_STATUS: &str = "grpc-status";
pub const GRPC_MESSAGE: &str = "grpc-message";
const APPLICATION_GRPC: &str = "application/grpc";

/// Whether the request is a gRPC one by Kong's test of its `Content-Type`.
#[inline]
pub fn is_grpc(content_type: Option<&HeaderValue>) -> bool {
    content_type.is_some_and(|v| v.as_bytes().starts_with(APPLICATION_GRPC.as_bytes()))
}

/// Kong's table from HTTP statuses to gRPC codes (200, 400 and 500 are its class fallbacks too).
pub fn code(status: StatusCode) -> u8 {
    match status.as_u16() {
        401 => 16,
        403 => 7,
        404 => 5,
        409 => 6,
        429 => 8,
        499 => 1,
        501 => 12,
        503 => 14,
        504 => 4,
        500..=599 => 13,
        400..=499 => 3,
        200..=299 => 0,
        _ => 2,
    }
}

/// The name gRPC gives a code (Kong's `grpc-message` when it has no text of its own).
pub fn name(code: u8) -> &'static str {
    const NAMES: [&str; 17] = [
        "OK",
        "Canceled",
        "Unknown",
        "InvalidArgument",
        "DeadlineExceeded",
        "NotFound",
        "AlreadyExists",
        "PermissionDenied",
        "ResourceExhausted",
        "FailedPrecondition",
        "Aborted",
        "OutOfRange",
        "Unimplemented",
        "Internal",
        "Unavailable",
        "DataLoss",
        "Unauthenticated",
    ];
    NAMES.get(code as usize).copied().unwrap_or("Unknown")
}

/// Makes `headers` a headers-only gRPC answer for `status`: `grpc-status` and `grpc-message` unless
/// already set (`message` None: the code's name), and `Content-Type: application/grpc` when `typed`.
fn headers_only(headers: &mut HeaderMap, status: StatusCode, message: Option<&str>, typed: bool) {
    let code = code(status);
    if !headers.contains_key(GRPC_STATUS) {
        headers.insert(GRPC_STATUS, HeaderValue::from(u16::from(code)));
    }
    if !headers.contains_key(GRPC_MESSAGE) {
        let text = HeaderValue::from_str(message.unwrap_or(name(code)));
        headers.insert(GRPC_MESSAGE, text.unwrap_or(HeaderValue::from_static("")));
    }
    if typed {
        headers.insert(CONTENT_TYPE, HeaderValue::from_static(APPLICATION_GRPC));
    } else {
        headers.remove(CONTENT_TYPE);
    }
    headers.insert(CONTENT_LENGTH, HeaderValue::from(0));
}

/// The gateway's error for a gRPC request (the caller adds Kong's gateway headers).
pub fn error(err: &ProxyError) -> Response<Bytes> {
    let mut resp = Response::new(Bytes::new());
    *resp.status_mut() = err.status();
    // nginx's errors go through Kong's error handler, whose text becomes the message; the others are
    // `kong.response.error` calls, whose message a gRPC answer leaves out.
    let by_nginx = err.made_by_nginx();
    let message = by_nginx.then(|| err.message());
    headers_only(resp.headers_mut(), err.status(), message, !by_nginx);
    resp
}

/// A plugin's answer to a gRPC request, as `kong.response.error` sends it then: its status and
/// headers, its body dropped.
pub fn plugin_answer(mut resp: PluginResponse) -> PluginResponse {
    let typed = resp
        .headers
        .get(CONTENT_TYPE)
        .is_none_or(|v| !is_grpc(Some(v)));
    if typed {
        headers_only(&mut resp.headers, resp.status, None, true);
        resp.body = Bytes::new();
    }
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_follow_kongs_table_and_fallbacks() {
        let c = |s: u16| code(StatusCode::from_u16(s).unwrap());
        assert_eq!([c(401), c(404), c(429), c(503), c(504)], [16, 5, 8, 14, 4]);
        assert_eq!([c(502), c(418), c(204), c(302)], [13, 3, 0, 2]);
        assert_eq!(name(16), "Unauthenticated");
    }

    #[test]
    fn errors_are_headers_only() {
        let r = error(&ProxyError::NoRoute);
        assert_eq!(r.status(), 404);
        let h = r.headers();
        assert_eq!(h[GRPC_STATUS], "5");
        assert_eq!(h[GRPC_MESSAGE], "NotFound");
        assert_eq!(h[CONTENT_TYPE], "application/grpc");
        assert_eq!(h[CONTENT_LENGTH], "0");
        let r = error(&ProxyError::BadGateway);
        assert_eq!(r.headers()[GRPC_STATUS], "13");
        assert_eq!(
            r.headers()[GRPC_MESSAGE],
            "An invalid response was received from the upstream server"
        );
        assert!(!r.headers().contains_key(CONTENT_TYPE));
        assert!(r.body().is_empty());
    }

    #[test]
    fn a_plugin_answer_loses_its_body() {
        let r = plugin_answer(PluginResponse::message(
            StatusCode::UNAUTHORIZED,
            "No API key",
        ));
        assert_eq!(r.headers[GRPC_STATUS], "16");
        assert_eq!(r.headers[GRPC_MESSAGE], "Unauthenticated");
        assert_eq!(r.headers[CONTENT_TYPE], "application/grpc");
        assert!(r.body.is_empty());
    }
}
