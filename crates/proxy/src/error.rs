//! The one error type of the request path, and the one place it becomes an HTTP response: whenever a step
//! of the request driver ([`crate::handler`]) fails (a malformed head, no route, no service, the upstream),
//! the driver answers with [`error_response`]. The upstream side's own error
//! (`sluice_upstream::UpstreamError`) is turned into it here, by `From`.

use crate::exchange::Exchange;
use crate::mime::negotiate;
use crate::respond;
use bytes::Bytes;
use http::header::{ACCEPT, CONTENT_TYPE};
use http::{request, HeaderValue, Response, StatusCode};
use sluice_upstream::body::{full, ProxyBody};
use sluice_upstream::conn::Failed;
use sluice_upstream::spool::SpoolError;
use sluice_upstream::UpstreamError;

/// Why the gateway answered instead of the upstream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProxyError {
    /// 404: no route matched.
    NoRoute,
    /// 503: the matched route has no service and no plugin answered.
    NoService,
    /// 426: an https-only route was hit over plain http.
    HttpsRequired,
    /// 301/302/307/308 to https (the route's `https_redirect_status_code`); no body.
    HttpsRedirect { status: u16, location: String },
    /// 502: connection refused or reset, an invalid response, or an upstream scheme this build cannot speak.
    BadGateway,
    /// 503: every target is disabled.
    NoPeer,
    /// 503: the upstream host did not resolve.
    NameResolution,
    /// 504: connect, write or read timeout.
    Timeout,
    /// 400: the request cannot be proxied as sent.
    BadRequest,
    /// 408: the client sent no body bytes within `client_body_timeout` (the connection closes after it).
    ClientTimeout,
    /// 413: a body over `client_max_body_size`, or one a plugin needs that is larger than the gateway
    /// buffers for plugins.
    PayloadTooLarge,
    /// 413: a streamed body passed the cap a plugin put on it (`RequestCtx::body_limit`); the plugin's own
    /// answer replaces this one on the plugin path, which is the only one that caps bodies.
    BodyOverLimit,
    /// 501: a transfer coding other than `chunked` (nginx's answer; Kong's error page words it as for any
    /// status it has no message of its own for).
    NotImplemented,
    /// 500.
    Internal,
}

/// The one place an upstream-side failure (`sluice_upstream`'s error) becomes the proxy's.
impl From<UpstreamError> for ProxyError {
    fn from(e: UpstreamError) -> ProxyError {
        match e {
            UpstreamError::Connect => ProxyError::BadGateway,
            UpstreamError::Timeout => ProxyError::Timeout,
            UpstreamError::NameResolution => ProxyError::NameResolution,
        }
    }
}

/// A client body's failure, whether the upstream writer met it while streaming the body or request
/// buffering while reading it whole.
impl From<Failed> for ProxyError {
    fn from(f: Failed) -> ProxyError {
        match f {
            // The body broke off or broke its framing (a bad chunk): the client's fault, as nginx says
            // with 400, not the upstream's.
            Failed::ClientBody => ProxyError::BadRequest,
            // The client stalled its body past `client_body_timeout`.
            Failed::ClientTimeout => ProxyError::ClientTimeout,
            // A plugin's cap on a streamed body was passed: the plugin answers (`phases::send`).
            Failed::OverLimit => ProxyError::BodyOverLimit,
            // The node's `client_max_body_size`.
            Failed::TooLarge => ProxyError::PayloadTooLarge,
            Failed::Stalled => ProxyError::Timeout,
            Failed::NoAnswer | Failed::Malformed => ProxyError::BadGateway,
        }
    }
}

/// Request buffering's failures: the body's own, `client_max_body_size` (413), or the temporary file
/// (500, as nginx answers when it cannot write one).
impl From<SpoolError> for ProxyError {
    fn from(e: SpoolError) -> ProxyError {
        match e {
            SpoolError::Body(f) => f.into(),
            SpoolError::TooLarge => ProxyError::PayloadTooLarge,
            SpoolError::File(e) => {
                tracing::error!(error = %e, "cannot buffer a request body in a temporary file");
                ProxyError::Internal
            }
        }
    }
}

impl From<crate::strict::Malformed> for ProxyError {
    fn from(m: crate::strict::Malformed) -> ProxyError {
        match m {
            crate::strict::Malformed::BadRequest => ProxyError::BadRequest,
            crate::strict::Malformed::UnknownCoding => ProxyError::NotImplemented,
        }
    }
}

impl ProxyError {
    pub fn status(&self) -> StatusCode {
        match self {
            ProxyError::NoRoute => StatusCode::NOT_FOUND,
            ProxyError::NoService | ProxyError::NoPeer | ProxyError::NameResolution => {
                StatusCode::SERVICE_UNAVAILABLE
            }
            ProxyError::HttpsRequired => StatusCode::UPGRADE_REQUIRED,
            ProxyError::HttpsRedirect { status, .. } => {
                StatusCode::from_u16(*status).unwrap_or(StatusCode::MOVED_PERMANENTLY)
            }
            ProxyError::BadGateway => StatusCode::BAD_GATEWAY,
            ProxyError::Timeout => StatusCode::GATEWAY_TIMEOUT,
            ProxyError::BadRequest => StatusCode::BAD_REQUEST,
            ProxyError::ClientTimeout => StatusCode::REQUEST_TIMEOUT,
            ProxyError::PayloadTooLarge | ProxyError::BodyOverLimit => {
                StatusCode::PAYLOAD_TOO_LARGE
            }
            ProxyError::NotImplemented => StatusCode::NOT_IMPLEMENTED,
            ProxyError::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// Kong's message for this error.
    pub fn message(&self) -> &'static str {
        match self {
            ProxyError::NoRoute => "no Route matched with those values",
            ProxyError::NoService => "no Service found with those values",
            ProxyError::HttpsRequired => "Please use HTTPS protocol",
            ProxyError::HttpsRedirect { .. } => "",
            ProxyError::BadGateway => "An invalid response was received from the upstream server",
            ProxyError::NoPeer => "failure to get a peer from the ring-balancer",
            ProxyError::NameResolution => "name resolution failed",
            ProxyError::Timeout => "The upstream server is timing out",
            ProxyError::BadRequest => "Bad request",
            ProxyError::ClientTimeout => "Request timeout",
            ProxyError::PayloadTooLarge => "Payload too large",
            ProxyError::BodyOverLimit => "Request size limit exceeded",
            ProxyError::NotImplemented => "The upstream server responded with 501",
            ProxyError::Internal => "An unexpected error occurred",
        }
    }

    /// Whether nginx (not Kong's Lua code) produces this error in Kong: its error page then negotiates from
    /// `Content-Type` when the request has no `Accept`.
    pub(crate) fn made_by_nginx(&self) -> bool {
        matches!(
            self,
            ProxyError::BadGateway
                | ProxyError::Timeout
                | ProxyError::Internal
                | ProxyError::NotImplemented
                | ProxyError::ClientTimeout
        )
    }

    /// The response, its body in the format `Accept` asks for (JSON by default, HTML, XML, plain text).
    pub fn into_response(
        self,
        accept: Option<&HeaderValue>,
        content_type: Option<&HeaderValue>,
        request_id: &str,
    ) -> Response<Bytes> {
        let mut resp = Response::new(Bytes::new());
        *resp.status_mut() = self.status();
        let h = resp.headers_mut();
        match &self {
            ProxyError::HttpsRedirect { location, .. } => {
                if let Ok(v) = HeaderValue::from_str(location) {
                    h.insert(http::header::LOCATION, v);
                }
                return resp;
            }
            ProxyError::HttpsRequired => {
                h.insert(
                    http::header::CONNECTION,
                    HeaderValue::from_static("Upgrade"),
                );
                h.insert(
                    http::header::UPGRADE,
                    HeaderValue::from_static("TLS/1.2, HTTP/1.1"),
                );
            }
            _ => {}
        }
        let source = match accept {
            None if self.made_by_nginx() => content_type,
            _ => accept,
        };
        let mime = negotiate(source.map(HeaderValue::as_bytes));
        h.insert(
            http::header::CONTENT_TYPE,
            HeaderValue::from_static(mime.content_type()),
        );
        *resp.body_mut() = Bytes::from(mime.error_body(self.message(), request_id));
        resp
    }
}

/// The request headers an error body is negotiated from, taken while the client's head is at hand.
#[derive(Default, Clone)]
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

/// The gateway's response to a failed request, with Kong's headers; upstream failures are logged.
pub fn error_response(err: ProxyError, n: &Negotiation, x: &Exchange<'_>) -> Response<ProxyBody> {
    error_parts(err, n, x).map(full)
}

/// [`error_response`] with its body still whole (the plugin path runs `header_filter` and `body_filter` on it).
pub fn error_parts(err: ProxyError, n: &Negotiation, x: &Exchange<'_>) -> Response<Bytes> {
    if matches!(
        err,
        ProxyError::BadGateway | ProxyError::Timeout | ProxyError::Internal
    ) {
        tracing::warn!(request_id = x.request_id, error = %err, "upstream failure");
    }
    let mut resp = match crate::grpc::status::is_grpc(n.content_type.as_ref()) {
        // A gRPC request gets a gRPC status (grpc/status.rs).
        true => crate::grpc::status::error(&err),
        false => err.into_response(n.accept.as_ref(), n.content_type.as_ref(), x.request_id),
    };
    respond::gateway_response(
        resp.headers_mut(),
        x.shared.settings.headers,
        x.request_id,
        x.started,
    );
    resp
}

impl std::fmt::Display for ProxyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.status().as_u16(), self.message())
    }
}

impl std::error::Error for ProxyError {}

#[cfg(test)]
mod tests;
