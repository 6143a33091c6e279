//! The one error type of the request path, and the one place it becomes an HTTP response.

use bytes::Bytes;
use http::{HeaderValue, Response, StatusCode};

/// Why the gateway answered instead of the upstream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProxyError {
    /// 404: no route matched.
    NoRoute,
    /// 503: the route has no service.
    NoService,
    /// 426: an https-only route was hit over plain http.
    HttpsRequired,
    /// 3xx redirect to https (the route's `https_redirect_status_code`).
    HttpsRedirect { status: u16, location: String },
    /// 502: connection refused or reset, or an invalid response.
    BadGateway,
    /// 503: every target is down or disabled.
    NoPeer,
    /// 503: the upstream host did not resolve.
    NameResolution,
    /// 504: connect, write or read timeout.
    Timeout,
    /// 400: the request could not be proxied as sent.
    BadRequest(&'static str),
    /// 500.
    Internal,
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
            ProxyError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ProxyError::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// Kong's message for this error.
    pub fn message(&self) -> &'static str {
        match self {
            ProxyError::NoRoute => "no Route matched with those values",
            ProxyError::NoService => "no Service found with those values",
            ProxyError::HttpsRequired => "Please use HTTPS protocol",
            ProxyError::HttpsRedirect { .. } => "Moved",
            ProxyError::BadGateway => "An invalid response was received from the upstream server",
            ProxyError::NoPeer => "failure to get a peer from the ring-balancer",
            ProxyError::NameResolution => "name resolution failed",
            ProxyError::Timeout => "The upstream server is timing out",
            ProxyError::BadRequest(m) => m,
            ProxyError::Internal => "An unexpected error occurred",
        }
    }

    /// The response, its body negotiated from `Accept` like Kong (JSON by default; HTML, XML, plain text).
    pub fn into_response(self, accept: Option<&HeaderValue>, request_id: &str) -> Response<Bytes> {
        let message = self.message();
        let accept = accept.and_then(|a| a.to_str().ok()).unwrap_or("");
        let (content_type, body) = if accept.contains("text/html") {
            (
                "text/html; charset=utf-8",
                format!(
                    "<!doctype html>\n<html>\n  <head>\n    <meta charset=\"utf-8\">\n    <title>Error</title>\n  </head>\n  <body>\n    <h1>Error</h1>\n    <p>{message}.</p>\n    <p>request_id: {request_id}</p>\n  </body>\n</html>\n"
                ),
            )
        } else if accept.contains("application/xml") {
            (
                "application/xml; charset=utf-8",
                format!("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<error>\n  <message>{message}</message>\n  <requestid>{request_id}</requestid>\n</error>\n"),
            )
        } else if accept.contains("text/plain") {
            (
                "text/plain; charset=utf-8",
                format!("{message}\nrequest_id: {request_id}\n"),
            )
        } else {
            (
                "application/json; charset=utf-8",
                serde_json::json!({ "message": message, "request_id": request_id }).to_string(),
            )
        };
        let mut resp = Response::new(Bytes::from(body));
        *resp.status_mut() = self.status();
        let h = resp.headers_mut();
        h.insert(
            http::header::CONTENT_TYPE,
            HeaderValue::from_static(content_type),
        );
        match &self {
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
            ProxyError::HttpsRedirect { location, .. } => {
                if let Ok(v) = HeaderValue::from_str(location) {
                    h.insert(http::header::LOCATION, v);
                }
            }
            _ => {}
        }
        resp
    }
}

impl std::fmt::Display for ProxyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.status().as_u16(), self.message())
    }
}

impl std::error::Error for ProxyError {}
