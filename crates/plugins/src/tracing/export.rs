//! Delivering spans: one HTTP POST per batch to the plugin's endpoint, from the `sluice-log` thread, with
//! the log thread's [`HttpClient`] (kept-alive connections). The queue holds each span already encoded
//! (protobuf for OTLP, JSON for Zipkin); [`Exporter::frame`] joins a batch into one request body.

use crate::logging::http_client::{HttpClient, Limits};
use crate::logging::queue::Sink;
use bytes::Bytes;
use http::header::{HeaderMap, HeaderName, HeaderValue, CONTENT_TYPE};
use http::Method;
use std::time::Duration;

/// How a batch of encoded spans becomes a request body.
pub type Frame = Box<dyn Fn(&[Bytes]) -> Bytes + Send + Sync>;

/// An HTTP endpoint that receives batches of spans.
pub struct Exporter {
    client: HttpClient,
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

/// How long an idle connection to the endpoint is kept: OpenResty's `lua_socket_keepalive_timeout`
/// default, which Kong's exporters (`request_uri` without `keepalive_timeout`) get.
const KEEPALIVE: Duration = Duration::from_secs(60);

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
        let url = url::Url::parse(url).map_err(|e| format!("invalid url '{url}': {e}"))?;
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
        for (name, value) in extra {
            let name = HeaderName::from_bytes(name.as_bytes()).map_err(|e| e.to_string())?;
            let value = HeaderValue::from_str(value).map_err(|e| e.to_string())?;
            headers.insert(name, value);
        }
        // The request as a whole (connecting, sending, reading) gets the three timeouts' sum.
        let limits = Limits {
            connect: Duration::from_millis(timeouts.connect),
            total: Duration::from_millis(timeouts.connect + timeouts.send + timeouts.read),
            keepalive: Some(KEEPALIVE),
        };
        // Kong's exporters verify an https endpoint's certificate (lua-resty-http's default).
        let client = HttpClient::new(&url, Method::POST, headers, limits, true)?;
        Ok(Exporter {
            client,
            frame,
            only_status,
        })
    }

    /// `host:port` of the endpoint, for warnings.
    pub fn endpoint_name(&self) -> String {
        self.client.endpoint_name()
    }
}

impl Sink for Exporter {
    async fn deliver(&self, batch: &[Bytes]) -> Result<(), String> {
        let response = self
            .client
            .send((self.frame)(batch))
            .await
            .map_err(|e| format!("failed to send request: {e}"))?;
        let status = response.status;
        let delivered = match self.only_status {
            Some(only) => status == only,
            None => (200..300).contains(&status),
        };
        if delivered {
            return Ok(());
        }
        let body = &response.body;
        let shown = String::from_utf8_lossy(&body[..body.len().min(200)]).into_owned();
        Err(format!("response error: {status}, body: {shown}"))
    }
}
