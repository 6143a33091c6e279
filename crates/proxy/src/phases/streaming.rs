//! Bodies on the plugin path: buffering a request body a plugin reads, feeding the upstream's body to the
//! client through `body_filter`, and the facts the `log` phase gets.

use crate::error::ProxyError;
use crate::respond::{KongHeaders, Timings};
use crate::upstream::Tries;
use bytes::{Bytes, BytesMut};
use http_body::Frame;
use http_body_util::BodyExt;
use sluice_h1::ResponseFields;
use sluice_metrics::Source;
use sluice_plugins::logging::response_headers::ResponseHeaders;
use sluice_plugins::{LogRecord, PluginChain, RequestCtx};
use sluice_upstream::body::{is_client_timeout, BoxError, ProxyBody};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// Reads a whole request body, up to `limit` bytes (413 beyond, 408 when the client stalls past
/// `client_body_timeout`, 400 when it fails otherwise).
pub async fn read_body(mut body: ProxyBody, limit: usize) -> Result<Bytes, ProxyError> {
    let mut out = BytesMut::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| match is_client_timeout(e.as_ref()) {
            true => ProxyError::ClientTimeout,
            false => ProxyError::BadRequest,
        })?;
        if let Ok(data) = frame.into_data() {
            if out.len() + data.len() > limit {
                return Err(ProxyError::PayloadTooLarge);
            }
            out.extend_from_slice(&data);
        }
    }
    Ok(out.freeze())
}

/// Feeds the upstream body to the client, through `body_filter` when `filtering`; returns the bytes sent.
/// Stops when the upstream ends or fails, or the client goes away.
pub async fn pump<B>(
    mut body: B,
    tx: mpsc::Sender<Result<Frame<Bytes>, BoxError>>,
    chain: &PluginChain,
    ctx: &mut RequestCtx<'_>,
    filtering: bool,
) -> u64
where
    B: http_body::Body<Data = Bytes, Error = BoxError> + Unpin,
{
    let mut sent = 0u64;
    loop {
        let frame = match body.frame().await {
            None => break,
            Some(Err(e)) => {
                let _ = tx.send(Err(e)).await;
                return sent;
            }
            Some(Ok(frame)) => frame,
        };
        let frame = match frame.into_data() {
            Ok(mut data) => {
                if filtering {
                    chain.body_filter(ctx, &mut data, false);
                }
                if data.is_empty() {
                    continue;
                }
                sent += data.len() as u64;
                Frame::data(data)
            }
            Err(other) => other,
        };
        if tx.send(Ok(frame)).await.is_err() {
            return sent;
        }
    }
    if filtering {
        let mut last = Bytes::new();
        chain.body_filter(ctx, &mut last, true);
        if !last.is_empty() {
            sent += last.len() as u64;
            let _ = tx.send(Ok(Frame::data(last))).await;
        }
    }
    sent
}

/// What the log record needs from a proxied response.
pub struct Upstream {
    pub timings: Timings,
    pub tries: Tries,
    /// Path and query as sent upstream (kept only for chains that log).
    pub uri: Option<String>,
}

/// What the log record needs from the response head, taken before the head is handed to hyper.
pub struct LogFacts {
    status: u16,
    /// Rendered now, for the record: the head itself goes to the client.
    headers: ResponseHeaders,
    /// Kong's name for who made the response (`upstream`, `plugin`, `gateway`).
    source: &'static str,
    started: Instant,
    /// Time until the response head was ready, Kong's `latencies.kong` of a response the upstream did
    /// not make (None for an upstream's head rendered by [`LogFacts::with_late`]: its record always has
    /// the upstream's timings, which say it, so the clock is not read for it).
    head_latency: Option<Duration>,
}

impl LogFacts {
    pub fn new(head: &http::response::Parts, source: Source, started: Instant) -> LogFacts {
        let headers = ResponseHeaders::of(&head.headers);
        LogFacts::rendered(head, headers, source, started, Some(started.elapsed()))
    }

    /// The facts of an upstream's head whose Kong headers the server adds when it writes it (`late`, see
    /// [`crate::exchange::Sending::send`]), and its upstream fields too when they were left out of the
    /// map (`upstream`): the record shows the head as the client gets it.
    pub fn with_late(
        head: &http::response::Parts,
        late: &KongHeaders,
        upstream: Option<&ResponseFields>,
        started: Instant,
    ) -> LogFacts {
        // Kong's fields, at most six.
        let room = head.headers.len() + upstream.map_or(0, ResponseFields::len) + 6;
        let mut members = ResponseHeaders::open(room);
        let has_server = match upstream {
            // The head's map is empty then (what the server writes after the upstream's fields).
            Some(fields) => super::log_fields::members(&mut members, fields, late),
            None => super::log_fields::map_members(&mut members, &head.headers, late),
        };
        late.log_members(&mut members, has_server);
        LogFacts::rendered(head, members.close(), Source::Service, started, None)
    }

    fn rendered(
        head: &http::response::Parts,
        headers: ResponseHeaders,
        source: Source,
        started: Instant,
        head_latency: Option<Duration>,
    ) -> LogFacts {
        LogFacts {
            status: head.status.as_u16(),
            headers,
            source: match source {
                Source::Service => "upstream",
                Source::Exit => "plugin",
                Source::Error => "gateway",
            },
            started,
            head_latency,
        }
    }

    /// The record for the log phase, once `response_bytes` were sent (`upstream` is None when the
    /// response did not come from the upstream).
    pub fn record(
        self,
        ctx: &RequestCtx<'_>,
        response_bytes: u64,
        upstream: Option<Upstream>,
    ) -> LogRecord {
        let (timings, upstream_uri, tries) = match upstream {
            Some(Upstream {
                timings,
                tries,
                uri,
            }) => {
                // The answering try beside the failed ones, not pushed onto them: no allocation for a
                // request that went through at the first try.
                let all = sluice_plugins::Tries {
                    failed: tries.failed,
                    last: Some(tries.answered),
                };
                (Some(timings), uri, all)
            }
            None => (None, None, sluice_plugins::Tries::default()),
        };
        let request_bytes = match &ctx.body {
            Some(b) => b.len() as u64,
            None => ctx
                .request
                .headers
                .get(http::header::CONTENT_LENGTH)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.parse().ok())
                .unwrap_or(0),
        };
        LogRecord {
            status: self.status,
            response_headers: self.headers,
            request_bytes,
            response_bytes,
            kong_latency_ms: (timings.map(|t| t.proxy).or(self.head_latency))
                .unwrap_or_default()
                .as_millis() as u64,
            upstream_latency_ms: timings.map(|t| t.upstream.as_millis() as u64),
            request_latency_ms: self.started.elapsed().as_millis() as u64,
            source: self.source,
            upstream_uri,
            tries,
        }
    }
}
