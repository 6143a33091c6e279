//! Responses made by plugins (401, 403, 429, request-termination, ...).

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, StatusCode};

/// A response a plugin sends instead of proxying.
#[derive(Debug, Clone)]
pub struct PluginResponse {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl PluginResponse {
    /// Kong's usual shape: `{"message":"..."}` as JSON.
    pub fn message(status: StatusCode, message: &str) -> Self {
        let body = serde_json::json!({ "message": message }).to_string();
        Self::json(status, body.into())
    }

    /// A JSON body as given.
    pub fn json(status: StatusCode, body: Bytes) -> Self {
        let mut headers = HeaderMap::new();
        headers.insert(
            http::header::CONTENT_TYPE,
            HeaderValue::from_static("application/json; charset=utf-8"),
        );
        PluginResponse {
            status,
            headers,
            body,
        }
    }

    /// Adds a header (invalid values are dropped rather than failing the request).
    pub fn with_header(mut self, name: http::HeaderName, value: &str) -> Self {
        if let Ok(v) = HeaderValue::from_str(value) {
            self.headers.insert(name, v);
        }
        self
    }
}
