//! Gateway-made error responses: the request headers an error body is negotiated from, and the response
//! with Kong's headers, for the fast path ([`crate::handler`]) and the plugin path ([`crate::phases`]) alike.

use crate::error::ProxyError;
use crate::exchange::Exchange;
use crate::respond;
use http::header::{ACCEPT, CONTENT_TYPE};
use http::{request, HeaderValue, Response};
use sluice_upstream::body::{full, ProxyBody};

/// The request headers an error body is negotiated from.
pub struct Negotiation {
    accept: Option<HeaderValue>,
    content_type: Option<HeaderValue>,
}

impl Negotiation {
    #[inline]
    pub fn of(parts: &request::Parts) -> Negotiation {
        Negotiation {
            accept: parts.headers.get(ACCEPT).cloned(),
            content_type: parts.headers.get(CONTENT_TYPE).cloned(),
        }
    }
}

/// A gateway-made error response with Kong's headers; upstream failures are logged.
pub fn error_response(err: ProxyError, n: &Negotiation, x: &Exchange<'_>) -> Response<ProxyBody> {
    if matches!(
        err,
        ProxyError::BadGateway | ProxyError::Timeout | ProxyError::Internal
    ) {
        tracing::warn!(request_id = x.request_id, error = %err, "upstream failure");
    }
    let mut resp = err
        .into_response(n.accept.as_ref(), n.content_type.as_ref(), x.request_id)
        .map(full);
    respond::gateway_response(
        resp.headers_mut(),
        x.shared.settings.headers,
        x.request_id,
        x.started,
    );
    resp
}
