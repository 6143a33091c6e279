//! Per-request state shared by the proxy and the plugins of one request.
//!
//! The proxy builds a [`RequestCtx`] after routing, runs the plugin phases over it, and builds the upstream
//! request from `ctx.request` afterwards, so plugins edit the request simply by editing `request`.

use crate::credentials::Credentials;
use bytes::Bytes;
use sluice_model::{Consumer, Route, Service};
use std::net::SocketAddr;
use std::time::{Instant, SystemTime};

/// The credential an authentication plugin accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CredentialRef {
    /// The credential's id (sent upstream as `X-Credential-Identifier`). Owned, so a context can be
    /// detached from its snapshot and attached again for the log phase.
    pub id: uuid::Uuid,
    /// Which plugin accepted it, e.g. `key-auth`.
    pub plugin: &'static str,
}

/// A cap an `access` handler put on a request body the proxy streams upstream as it arrives (a body
/// without `Content-Length`, whose size is known only at its end): past `bytes`, the upstream request is
/// abandoned and the client gets `exceeded`'s answer, made from the request's headers.
#[derive(Clone, Copy)]
pub struct BodyLimit {
    pub bytes: u64,
    pub exceeded: fn(&http::HeaderMap) -> crate::response::PluginResponse,
}

/// Everything a plugin may read or change about one request.
pub struct RequestCtx<'s> {
    /// The downstream request head; edits here reach the upstream.
    pub request: http::request::Parts,
    /// The buffered request body, present only when some plugin in the chain asked for it.
    pub body: Option<Bytes>,
    /// The peer address of the downstream connection.
    pub client_addr: SocketAddr,
    /// The client IP after `trusted_ips` / `X-Forwarded-For` processing (what rate limits and
    /// ip-restriction see).
    pub client_ip: std::net::IpAddr,
    /// The peer (the direct connection, not the forwarded client) is in `trusted_ips`, so its
    /// `X-Forwarded-*` headers are believed (Kong's `kong.ip.is_trusted(kong.client.get_ip())`).
    pub peer_trusted: bool,
    /// `http` or `https`: the scheme the client used.
    pub scheme: &'static str,
    /// The port of the listener the request came in on (nginx's `$server_port`).
    pub server_port: u16,
    /// The TLS version and cipher of the client's connection (None over plain HTTP).
    pub tls: Option<sluice_tls::Negotiated>,
    /// The request id sent as `X-Kong-Request-Id`.
    pub request_id: &'s str,
    /// The matched route and its service (None for a route without service, or before routing).
    pub route: Option<&'s Route>,
    pub service: Option<&'s Service>,
    /// Regex path captures of the matched route (for request-transformer templates and hashing).
    pub captures: Option<&'s sluice_router::Captures>,
    /// Set by authentication plugins; consumer-scoped plugin configs are chosen from it.
    pub consumer: Option<&'s Consumer>,
    pub credential: Option<CredentialRef>,
    /// True when the consumer is the `anonymous` fallback of an auth plugin.
    pub anonymous: bool,
    /// Consumers and credentials of the snapshot this request runs on.
    pub credentials: &'s Credentials,
    /// Set by request-size-limiting for a body it cannot measure before it is streamed.
    pub body_limit: Option<BodyLimit>,
    /// Headers to add to whatever response the client gets (upstream or plugin-made), e.g. `RateLimit-*`.
    pub response_headers: crate::AddedHeaders,
    /// When the gateway received the request.
    pub started: Instant,
    pub started_wall: SystemTime,
    /// What a plugin keeps between its phases of one request (Kong's `kong.ctx.plugin`), keyed by a type
    /// private to the plugin. Empty, and free, unless a plugin stores something.
    pub plugin_data: http::Extensions,
}

/// One attempt to reach an upstream target (an entry of Kong's `tries`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TryRecord {
    pub addr: SocketAddr,
    /// When the target was picked.
    pub started: Instant,
    /// From picking the target until the request was on its way (or the try failed).
    pub latency: std::time::Duration,
    /// For a failed try, the status it would have answered: 502 (connection or transport failure) or
    /// 504 (timeout).
    pub failed: Option<u16>,
}

/// The targets a request tried, in order: the ones that failed, then the one that answered. Two parts
/// rather than one vector, so that the usual request (one try, which answered) is logged without an
/// allocation: its `failed` stays empty and unallocated.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tries {
    /// Tries before the last, in order.
    pub failed: Vec<TryRecord>,
    /// The last try (None when the request was not proxied).
    pub last: Option<TryRecord>,
}

impl Tries {
    /// Every try, in order.
    pub fn iter(&self) -> impl Iterator<Item = &TryRecord> {
        self.failed.iter().chain(&self.last)
    }

    pub fn len(&self) -> usize {
        self.failed.len() + usize::from(self.last.is_some())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl From<Vec<TryRecord>> for Tries {
    /// The tries of a list in order (the last one last).
    fn from(mut all: Vec<TryRecord>) -> Tries {
        let last = all.pop();
        Tries { failed: all, last }
    }
}

/// What happened to a finished request, for the `log` phase (Kong's basic log serializer fields).
#[derive(Debug, Clone)]
pub struct LogRecord {
    pub status: u16,
    /// Response headers as sent to the client, rendered for the log record when the head was sent.
    pub response_headers: crate::logging::response_headers::ResponseHeaders,
    pub request_bytes: u64,
    pub response_bytes: u64,
    /// Milliseconds spent in the gateway before proxying (Kong's `latencies.kong`).
    pub kong_latency_ms: u64,
    /// Milliseconds from sending to the upstream until its response headers (None when not proxied).
    pub upstream_latency_ms: Option<u64>,
    /// Milliseconds from receiving the request until the last byte was sent.
    pub request_latency_ms: u64,
    /// Every target tried, in order; the last one answered unless it is marked failed (empty when the
    /// request was not proxied).
    pub tries: Tries,
    /// Path and query as sent upstream (Kong's `upstream_uri`; None when not proxied): the request
    /// target as written, copied (not parsed again into a `PathAndQuery`, ~190 instructions per request).
    pub upstream_uri: Option<String>,
    /// Who produced the response: `upstream`, `plugin` (a plugin's early response) or `gateway` (an error).
    pub source: &'static str,
}
