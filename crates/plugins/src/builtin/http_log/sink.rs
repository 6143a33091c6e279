//! Delivering `http-log` batches: the endpoint, and one HTTP request per batch with the log thread's
//! [`HttpClient`] (kept-alive connections, Kong's `timeout` and `keepalive`).

use super::Config;
use crate::logging::http_client::{userinfo, HttpClient, Limits};
use crate::logging::queue::Sink;
use bytes::Bytes;
use http::header::{HeaderMap, HeaderName, HeaderValue, CONTENT_TYPE};
use http::Method;
use std::time::Duration;
use url::Url;

/// A parsed `http_endpoint`.
pub(super) struct Endpoint {
    /// The URL, user info included.
    pub url: Url,
    /// `user:password` as written in the endpoint, sent as Basic authorization.
    pub userinfo: Option<String>,
}

impl Endpoint {
    /// Accepts absolute `http`/`https` URLs with a host, as Kong's `url` type does.
    pub fn parse(endpoint: &str) -> Result<Endpoint, String> {
        let url = Url::parse(endpoint).map_err(|e| format!("invalid url '{endpoint}': {e}"))?;
        if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none_or(str::is_empty) {
            return Err(format!(
                "invalid url '{endpoint}': expected http(s)://host[:port]/path"
            ));
        }
        let userinfo = userinfo(&url);
        Ok(Endpoint { url, userinfo })
    }
}

/// Sends batches to one endpoint over kept-alive connections.
pub(super) struct HttpSink {
    client: HttpClient,
    /// Send a JSON array (max_batch_size > 1) rather than one object.
    array: bool,
}

impl HttpSink {
    pub fn new(config: &Config, array: bool) -> Result<HttpSink, String> {
        let endpoint = Endpoint::parse(&config.http_endpoint)?;
        let mut headers = HeaderMap::new();
        if let Some(extra) = &config.headers {
            for (name, value) in extra {
                let name = HeaderName::from_bytes(name.as_bytes()).map_err(|e| e.to_string())?;
                let value = HeaderValue::from_str(value.as_str().unwrap_or_default())
                    .map_err(|e| e.to_string())?;
                headers.insert(name, value);
            }
        }
        let content_type =
            HeaderValue::from_str(&config.content_type).map_err(|e| e.to_string())?;
        headers.insert(CONTENT_TYPE, content_type);
        let method = Method::from_bytes(config.method.as_bytes()).map_err(|e| e.to_string())?;
        let limits = Limits {
            connect: millis(config.timeout),
            total: millis(config.timeout),
            // OpenResty's `setkeepalive(0)`: no idle limit.
            keepalive: (config.keepalive > 0.0).then(|| millis(config.keepalive)),
        };
        // User info in the endpoint becomes Basic authorization (the schema refuses it together with an
        // `Authorization` header). As Kong (`ssl_verify = false`), the certificate is not checked.
        let client = HttpClient::new(&endpoint.url, method, headers, limits, false)?;
        Ok(HttpSink { client, array })
    }

    /// `host:port` of the endpoint, for warnings (never the user info or path).
    pub fn endpoint_name(&self) -> String {
        self.client.endpoint_name()
    }

    /// The request body: the record itself, or `[r1,r2,...]`.
    fn body(&self, batch: &[Bytes]) -> Bytes {
        match batch {
            [one] if !self.array => one.clone(),
            _ => crate::logging::json::array(batch),
        }
    }
}

/// Kong's millisecond settings as a duration.
fn millis(ms: f64) -> Duration {
    crate::logging::queue::secs(ms / 1000.0)
}

impl Sink for HttpSink {
    async fn deliver(&self, batch: &[Bytes]) -> Result<(), String> {
        let response = self
            .client
            .send(self.body(batch))
            .await
            .map_err(|e| format!("failed request to {}: {e}", self.endpoint_name()))?;
        if response.status < 300 {
            return Ok(());
        }
        let body = &response.body;
        let shown = String::from_utf8_lossy(&body[..body.len().min(200)]).into_owned();
        Err(format!(
            "request to {} returned status code {} and body {shown}",
            self.endpoint_name(),
            response.status
        ))
    }
}
