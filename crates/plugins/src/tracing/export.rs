//! Delivering spans: one HTTP POST per batch to the plugin's endpoint, from the `sluice-log` thread. The
//! queue holds each span already encoded (protobuf for OTLP, JSON for Zipkin); [`Exporter::frame`] joins a
//! batch into one request body.

use crate::logging::queue::Sink;
use bytes::Bytes;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, CONTENT_TYPE};
use std::time::Duration;

/// How a batch of encoded spans becomes a request body.
pub type Frame = Box<dyn Fn(&[Bytes]) -> Bytes + Send + Sync>;

/// An HTTP endpoint that receives batches of spans.
pub struct Exporter {
    client: reqwest::Client,
    url: reqwest::Url,
    headers: HeaderMap,
    frame: Frame,
    /// Only this status counts as delivered (OTLP: 200, as Kong); None accepts any 2xx (Zipkin).
    only_status: Option<u16>,
}

/// Timeouts in milliseconds, as Kong's `connect_timeout`, `send_timeout` and `read_timeout`.
pub struct Timeouts {
    pub connect: u64,
    pub send: u64,
    pub read: u64,
}

impl Exporter {
    /// An exporter to `url` with `headers` (the content type is `content_type` unless `headers` sets one).
    pub fn new(
        url: &str,
        content_type: &'static str,
        extra: &[(String, String)],
        timeouts: &Timeouts,
        frame: Frame,
        only_status: Option<u16>,
    ) -> Result<Exporter, String> {
        let url = reqwest::Url::parse(url).map_err(|e| format!("invalid url '{url}': {e}"))?;
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
        for (name, value) in extra {
            let name = HeaderName::from_bytes(name.as_bytes()).map_err(|e| e.to_string())?;
            let value = HeaderValue::from_str(value).map_err(|e| e.to_string())?;
            headers.insert(name, value);
        }
        // reqwest has no separate send and read timeouts: the request as a whole gets their sum.
        let client = reqwest::Client::builder()
            .no_proxy()
            .connect_timeout(Duration::from_millis(timeouts.connect))
            .timeout(Duration::from_millis(
                timeouts.connect + timeouts.send + timeouts.read,
            ))
            .build()
            .map_err(|e| format!("cannot build the span exporter's client: {e}"))?;
        Ok(Exporter {
            client,
            url,
            headers,
            frame,
            only_status,
        })
    }

    /// `host:port` of the endpoint, for warnings.
    pub fn endpoint_name(&self) -> String {
        format!(
            "{}:{}",
            self.url.host_str().unwrap_or_default(),
            self.url.port_or_known_default().unwrap_or_default()
        )
    }
}

impl Sink for Exporter {
    async fn deliver(&self, batch: &[Bytes]) -> Result<(), String> {
        let response = self
            .client
            .post(self.url.clone())
            .headers(self.headers.clone())
            .body((self.frame)(batch))
            .send()
            .await
            .map_err(|e| format!("failed to send request: {e}"))?;
        let status = response.status().as_u16();
        let body = response.bytes().await.unwrap_or_default();
        let delivered = match self.only_status {
            Some(only) => status == only,
            None => (200..300).contains(&status),
        };
        if delivered {
            return Ok(());
        }
        let shown = String::from_utf8_lossy(&body[..body.len().min(200)]).into_owned();
        Err(format!("response error: {status}, body: {shown}"))
    }
}
