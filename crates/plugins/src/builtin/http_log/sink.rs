//! Delivering `http-log` batches: the endpoint, the client, and one HTTP request per batch.

use super::Config;
use crate::logging::queue::Sink;
use base64::Engine;
use bytes::Bytes;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, AUTHORIZATION, CONTENT_TYPE};
use std::time::Duration;

/// A parsed `http_endpoint`.
pub(super) struct Endpoint {
    /// The URL without user info.
    pub url: reqwest::Url,
    /// `user:password` as written in the endpoint, sent as Basic authorization.
    pub userinfo: Option<String>,
}

impl Endpoint {
    /// Accepts absolute `http`/`https` URLs with a host, as Kong's `url` type does.
    pub fn parse(endpoint: &str) -> Result<Endpoint, String> {
        let mut url =
            reqwest::Url::parse(endpoint).map_err(|e| format!("invalid url '{endpoint}': {e}"))?;
        if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none_or(str::is_empty) {
            return Err(format!(
                "invalid url '{endpoint}': expected http(s)://host[:port]/path"
            ));
        }
        let userinfo = (!url.username().is_empty() || url.password().is_some())
            .then(|| format!("{}:{}", url.username(), url.password().unwrap_or_default()));
        // Clearing user info cannot fail on an http(s) URL with a host.
        let _ = url.set_username("");
        let _ = url.set_password(None);
        Ok(Endpoint { url, userinfo })
    }
}

/// Sends batches to one endpoint with pooled connections.
pub(super) struct HttpSink {
    client: reqwest::Client,
    url: reqwest::Url,
    method: reqwest::Method,
    headers: HeaderMap,
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
        if let Some(userinfo) = &endpoint.userinfo {
            let encoded = base64::engine::general_purpose::STANDARD.encode(userinfo);
            let value =
                HeaderValue::from_str(&format!("Basic {encoded}")).map_err(|e| e.to_string())?;
            headers.insert(AUTHORIZATION, value);
        }
        let method =
            reqwest::Method::from_bytes(config.method.as_bytes()).map_err(|e| e.to_string())?;
        let client = reqwest::Client::builder()
            .no_proxy()
            .timeout(millis(config.timeout))
            .pool_idle_timeout(millis(config.keepalive))
            .danger_accept_invalid_certs(true)
            .build()
            .map_err(|e| format!("cannot build the http-log client: {e}"))?;
        Ok(HttpSink {
            client,
            url: endpoint.url,
            method,
            headers,
            array,
        })
    }

    /// `host:port` of the endpoint, for warnings (never the user info or path).
    pub fn endpoint_name(&self) -> String {
        format!(
            "{}:{}",
            self.url.host_str().unwrap_or_default(),
            self.url.port_or_known_default().unwrap_or_default()
        )
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
            .request(self.method.clone(), self.url.clone())
            .headers(self.headers.clone())
            .body(self.body(batch))
            .send()
            .await
            .map_err(|e| format!("failed request to {}: {e}", self.endpoint_name()))?;
        let status = response.status();
        // Read the body even on success so the connection can be reused.
        let body = response.bytes().await.unwrap_or_default();
        if status.as_u16() < 300 {
            return Ok(());
        }
        let shown = String::from_utf8_lossy(&body[..body.len().min(200)]).into_owned();
        Err(format!(
            "request to {} returned status code {} and body {shown}",
            self.endpoint_name(),
            status.as_u16()
        ))
    }
}
