//! The steps of the request driver ([`crate::handler`]) that every proxied request takes, with or without
//! plugins: routing with Kong's protocol check (before any plugin runs), then balance and send ([`Sending`]:
//! the upstream request written from the client's, possibly plugin-edited, head, and sent with Kong's retries).

use crate::error::ProxyError;
use crate::path;
use crate::respond::{self, KongHeaders, Timings};
use crate::shared::Shared;
use crate::snapshot::{RouteInfo, ServiceInfo, Snapshot};
use crate::upstream;
use http::header::{HeaderValue, HOST};
use http::{request, Response, Uri, Version};
use sluice_h1::{FieldKind, ResponseFields};
use sluice_router::{Match, RequestParts};
use sluice_upstream::balancer::{Hashed, PickInput};
use sluice_upstream::body::ProxyBody;
use sluice_upstream::forward::{self, Downstream, Forwarded};
use sluice_upstream::pooled::PooledBody;
use sluice_upstream::readahead::UpstreamBody;
use sluice_upstream::wire::{self, WireRequest};
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::time::Instant;

mod body_rules;
mod upgrade;
pub use upgrade::{Switched, Upgrade};

/// Facts about the downstream connection.
#[derive(Debug, Clone)]
pub struct ConnInfo {
    pub peer: SocketAddr,
    /// The peer's IP address as a header value (`X-Real-IP`, `X-Forwarded-For`), made once per connection.
    pub peer_ip: HeaderValue,
    /// The peer is in `trusted_ips` (checked once per connection).
    pub trusted: bool,
    /// The listener's port as a header value (`X-Forwarded-Port`), built once per listener.
    pub local_port: HeaderValue,
    /// The listener's port.
    pub port: u16,
    pub scheme: &'static str,
    /// The server name the TLS client sent (routes with `snis` match on it).
    pub sni: Option<std::sync::Arc<str>>,
    /// What the TLS handshake agreed on (for log records).
    pub tls: Option<sluice_tls::Negotiated>,
}

/// Per-request facts every step reads.
pub struct Exchange<'a> {
    pub shared: &'a Shared,
    pub conn: &'a ConnInfo,
    pub request_id: &'a str,
    /// When the request head was received.
    pub started: Instant,
}

/// A request that matched a route, with what was decided while routing.
pub struct Routed {
    pub found: Match,
    /// The normalized path the router saw, when it differs from the path as sent.
    pub normalized: Option<String>,
    /// The URI as the client sent it: the upstream path is computed only while plugins left it unchanged.
    pub original: Uri,
    /// Bytes `strip_path` removes from `path` (None: the route keeps the path).
    pub strip: Option<usize>,
    pub forwarded: Forwarded,
    pub client_ip: IpAddr,
    pub version: Version,
    /// The route or its service speaks gRPC (the driver hands the request to `grpc`).
    pub grpc: Option<crate::grpc::Grpc>,
}

/// Routes a request and applies the https-only check. `parts` has passed [`crate::strict::check`], so its
/// `Host` already names the authority the request is for (HTTP/2's `:authority` or an absolute-form target's).
pub fn route(
    parts: &mut request::Parts,
    snap: &Snapshot,
    x: &Exchange<'_>,
) -> Result<Routed, ProxyError> {
    let (conn, shared) = (&x.conn, x.shared);
    let host_value = parts.headers.get(HOST);
    let host = host_value.and_then(|h| h.to_str().ok()).unwrap_or("");
    let raw_path = parts.uri.path();
    let path = path::normalize(raw_path);
    let found = snap
        .router
        .find(&RequestParts {
            method: parts.method.as_str(),
            host,
            port: conn.port,
            path: &path,
            headers: &parts.headers,
            sni: conn.sni.as_deref(),
        })
        .ok_or(ProxyError::NoRoute)?;
    let info = snap.routes.get(found.id).ok_or(ProxyError::Internal)?;
    let strip = info
        .strip_path
        .then(|| found.matched_path.map_or(0, |m| m.len));
    let trusted = shared.trust.is_trusted(conn.peer.ip());
    let forwarded = Forwarded::new(
        &parts.headers,
        &Downstream {
            trusted,
            scheme: conn.scheme,
            listen_port: &conn.local_port,
            host: host_value,
            uri: &parts.uri,
            stripped_prefix: strip.filter(|n| *n > 0).and_then(|n| path.get(..n)),
        },
    );
    if info.https_only && !forwarded.is_https() {
        if info.https_redirect_status == 426 {
            return Err(ProxyError::HttpsRequired);
        }
        let pq = parts.uri.path_and_query().map_or("/", |p| p.as_str());
        return Err(ProxyError::HttpsRedirect {
            status: info.https_redirect_status,
            location: format!("https://{}{pq}", String::from_utf8_lossy(forwarded.host())),
        });
    }
    forward::drop_connection_named(&mut parts.headers);
    Ok(Routed {
        client_ip: shared.trust.client_ip(&parts.headers, conn.peer.ip()),
        normalized: match path {
            std::borrow::Cow::Owned(p) => Some(p),
            std::borrow::Cow::Borrowed(_) => None,
        },
        original: parts.uri.clone(),
        strip,
        forwarded,
        found,
        version: parts.version,
        grpc: info.grpc,
    })
}

/// Writes the (possibly plugin-edited) client request as the upstream request: path per `strip_path` and
/// `path_handling` (unless a plugin set its own), query as received, hop-by-hop headers out, `X-Forwarded-*`,
/// `X-Real-IP`, `Via` and the request id in. `parts` is only read.
fn upstream_request(
    parts: &request::Parts,
    body: ProxyBody,
    routed: Routed,
    info: &RouteInfo,
    svc: &ServiceInfo,
    x: &Exchange<'_>,
) -> Result<WireRequest, ProxyError> {
    // Borrowed where it can be: the joined path when nothing needed escaping, the client's path when a
    // plugin set it, and the path alone without a query (each was an allocation and a copy per request).
    let (joined, escaped);
    let path = if parts.uri.path() == routed.original.path() {
        let normalized = routed.normalized.as_deref().unwrap_or(parts.uri.path());
        joined = path::upstream_path(
            svc.path.as_deref(),
            normalized,
            routed.strip,
            info.path_handling_v1,
        );
        escaped = path::escape(&joined);
        &*escaped
    } else {
        parts.uri.path()
    };
    let with_query;
    let target = match parts.uri.query() {
        Some(q) => {
            with_query = format!("{path}?{q}");
            with_query.as_str()
        }
        None => path,
    };
    if !target.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(ProxyError::BadRequest);
    }
    let downstream = wire::HopFacts {
        forwarded: routed.forwarded,
        peer: x.conn.peer.ip(),
        peer_text: &x.conn.peer_ip,
        client_ip: routed.client_ip,
        version: routed.version,
        request_id: x
            .shared
            .settings
            .upstream_request_id
            .then_some(x.request_id),
    };
    Ok(WireRequest::new(parts, target, body, downstream))
}

/// Balance and send: the upstream request, written, with what sending it needs (the balancer's hash
/// input, and indices into the snapshot the request was routed on). Held across the upstream wait, so
/// it carries no more than that (the client's head is not in it).
pub struct Sending {
    req: WireRequest,
    hashed: Hashed,
    route: usize,
    service: usize,
}

impl Sending {
    /// Finds the route's service, computes the balancer's hash input (`consumer` and `captures` as the
    /// plugins left them) and writes the upstream request from `parts`.
    // Always inlined: out of line, its result (the upstream request, a few hundred bytes) is copied out
    // and then copied again into the request's future (two `memcpy`s, ~150 instructions per request).
    #[inline(always)]
    pub fn prepare(
        parts: &request::Parts,
        body: ProxyBody,
        routed: Routed,
        consumer: Option<&uuid::Uuid>,
        captures: Option<&sluice_router::Captures>,
        snap: &Snapshot,
        x: &Exchange<'_>,
    ) -> Result<Sending, ProxyError> {
        let route = routed.found.id;
        let info = snap.routes.get(route).ok_or(ProxyError::Internal)?;
        let service = info.service.ok_or(ProxyError::NoService)?;
        let svc = snap.services.get(service).ok_or(ProxyError::NoService)?;
        let hashed = hash_request(svc, parts, &routed, consumer, captures);
        let req = upstream_request(parts, body, routed, info, svc, x)?;
        Ok(Sending {
            req,
            hashed,
            route,
            service,
        })
    }

    /// The index of the route the request was routed to.
    pub fn route(&self) -> usize {
        self.route
    }

    /// The request target as written (path and query).
    pub fn target(&self) -> &str {
        self.req.target()
    }

    /// Sends the upstream request and decorates the response head (with the hashing cookie when one was
    /// made up). `ready` is when the request was ready for the upstream: the end of Kong's proxy latency and
    /// the start of the first try. Pass a clock read made after the last await; the fast path, which has
    /// not awaited since the request arrived, passes `x.started` and saves one.
    ///
    /// Not an `async fn` itself: the returned future is the send's own, whose arguments are the fields (the
    /// fast path's future holds it across the upstream wait, where a nesting level or `self` beside its
    /// moved-out fields would be bytes moved per request).
    ///
    /// `late` says what of the head is left to the server that writes it ([`Late`]): Kong's headers as
    /// [`Proxied::late`] facts, and on the fast path the upstream's fields as received too. Only where
    /// nothing reads the head before then (no `header_filter`, no `log`). An upstream head with a `Via`
    /// gets Kong's headers in its map all the same, where the two are joined.
    #[inline]
    pub fn send<'a>(
        self,
        snap: &'a Snapshot,
        x: &'a Exchange<'a>,
        ready: Instant,
        late: Late,
    ) -> impl Future<Output = Result<Proxied, ProxyError>> + 'a {
        let (req, hashed, ids) = (self.req, self.hashed, (self.route, self.service));
        send(req, hashed, ids, (snap, x), ready, late)
    }
}

/// What of a proxied response's head is left to the server that writes it (HTTP/1.1: as text).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Late {
    /// Nothing: the head is whole in its map (something reads it before it is written, or h2).
    No,
    /// Kong's headers ([`Proxied::late`]) and the upstream's fields as received ([`Proxied::upstream`]):
    /// no header map is made of them. For a head nothing reads before the HTTP/1.1 writer but the log
    /// record (the fast path, routes whose plugins only log). A head the gateway must change (an upstream
    /// `Via` to join, a hashing cookie to add) still gets a map, Kong's headers left to the server unless
    /// there is a `Via`.
    All,
}

/// [`Sending::send`].
async fn send(
    mut req: WireRequest,
    hashed: Hashed,
    (route, service): (usize, usize),
    (snap, x): (&Snapshot, &Exchange<'_>),
    ready: Instant,
    late: Late,
) -> Result<Proxied, ProxyError> {
    let (Some(info), Some(svc)) = (snap.routes.get(route), snap.services.get(service)) else {
        return Err(ProxyError::Internal);
    };
    if req.body.is_some() {
        // Boxed: most requests have no body, and the fast path's future should not carry this step.
        let rules = &x.shared.settings.body_buffering;
        Box::pin(body_rules::apply(&mut req, info.request_buffering, rules)).await?;
    }
    let proxy_latency = ready.saturating_duration_since(x.started);
    // Not boxed: since the upstream client runs in this task, boxing the retry loop costs more than moving it
    // (callgrind, scripts/instructions.sh: 35.8k vs 35.5k instructions per request).
    let answer = upstream::send(&mut req, svc, info.preserve_host, hashed.value, ready).await?;
    let timings = Timings {
        proxy: proxy_latency,
        upstream: answer.sent_at.elapsed(),
    };
    // Written out rather than calling `proxied` (which makes the same response for upgrade requests): even
    // inlined, the call cost the fast path 160 of its 29k instructions per request (scripts/instructions.sh).
    let response = answer.head;
    let mut head = Response::new(()).into_parts().0;
    head.status = response.status;
    head.version = response.version;
    let kong = kong_headers(x, timings, response.status);
    let mut body = PooledBody::new(
        answer.conn,
        response.framing,
        response.keep_alive,
        svc.read_timeout,
    );
    if let Some(inflight) = answer.inflight {
        body.hold(inflight);
    }
    // Response buffering (Kong's `response_buffering`): the body read ahead of the client.
    let buffering = info
        .response_buffering
        .then_some(&x.shared.settings.response_buffering);
    let body = UpstreamBody::new(body, buffering, &response.fields);
    // A `Via` from the upstream is joined with Kong's, and a hashing cookie appended: in the map.
    let via = response.fields.has(FieldKind::Via);
    let (late, upstream) = match late {
        Late::All if !via && hashed.set_cookie.is_none() => (Some(kong), Some(response.fields)),
        Late::All if !via => {
            head.headers = respond::forwarded_map(&response.fields);
            (Some(kong), None)
        }
        _ => {
            head.headers = response.fields.to_map();
            respond::upstream_response(&mut head, &kong);
            (None, None)
        }
    };
    if let Some(v) = hashed
        .set_cookie
        .and_then(|c| HeaderValue::from_str(&c).ok())
    {
        head.headers.append(http::header::SET_COOKIE, v);
    }
    Ok(Proxied {
        head,
        late,
        upstream,
        body,
        timings,
        tries: answer.tries,
    })
}

/// The upstream's answer as the client gets it: its head decorated with Kong's response headers (and
/// the hashing cookie when one was made up), its body read from the connection. What [`send`] does, for
/// an upgrade request the upstream did not switch.
fn proxied(
    answer: upstream::Answer,
    set_cookie: Option<String>,
    svc: &ServiceInfo,
    x: &Exchange<'_>,
    timings: Timings,
) -> Proxied {
    let response = answer.head;
    let head = decorated(
        response.status,
        response.version,
        response.fields.to_map(),
        set_cookie,
        x,
        timings,
    );
    let mut body = PooledBody::new(
        answer.conn,
        response.framing,
        response.keep_alive,
        svc.read_timeout,
    );
    if let Some(inflight) = answer.inflight {
        body.hold(inflight);
    }
    // An upgrade the upstream refused: a short answer, not read ahead.
    let body = UpstreamBody::Direct(body);
    Proxied {
        head,
        late: None,
        upstream: None,
        body,
        timings,
        tries: answer.tries,
    }
}

/// An upstream's response head with Kong's response headers (hop-by-hop fields out), and the hashing
/// cookie when one was made up.
pub(crate) fn decorated(
    status: http::StatusCode,
    version: Version,
    headers: http::HeaderMap,
    set_cookie: Option<String>,
    x: &Exchange<'_>,
    timings: Timings,
) -> http::response::Parts {
    let mut head = Response::new(()).into_parts().0;
    head.status = status;
    head.version = version;
    head.headers = headers;
    respond::upstream_response(&mut head, &kong_headers(x, timings, status));
    if let Some(v) = set_cookie.and_then(|c| HeaderValue::from_str(&c).ok()) {
        head.headers.append(http::header::SET_COOKIE, v);
    }
    head
}

/// Kong's headers for an upstream's response with `status`.
fn kong_headers(x: &Exchange<'_>, timings: Timings, status: http::StatusCode) -> KongHeaders {
    // Request ids are always 32 hex characters (`request_id::next`).
    let id = x.request_id.as_bytes().try_into().unwrap_or([b'0'; 32]);
    KongHeaders::new(x.shared.settings.headers, timings, status.as_u16(), id)
}

/// What came back from the upstream, decorated with Kong's response headers.
pub struct Proxied {
    pub head: http::response::Parts,
    /// Kong's headers when they were left for the HTTP/1.1 writer (see [`Sending::send`]'s `late`).
    pub late: Option<KongHeaders>,
    /// The upstream's fields when they were left out of `head` too ([`Late::All`]).
    pub upstream: Option<ResponseFields>,
    pub body: UpstreamBody,
    pub timings: Timings,
    /// The targets tried; the last one answered.
    pub tries: upstream::Tries,
}

/// The consistent-hashing value of a request (nothing unless the service's upstream hashes), computed
/// from the client's request before it becomes the upstream request.
pub(crate) fn hash_request(
    svc: &ServiceInfo,
    parts: &request::Parts,
    routed: &Routed,
    consumer: Option<&uuid::Uuid>,
    captures: Option<&sluice_router::Captures>,
) -> Hashed {
    if !svc.balancer.hashes() {
        return Hashed::default();
    }
    // The consumer id as text on the stack: formatted only for a balancer that hashes, never allocated.
    let mut id_text = uuid::Uuid::encode_buffer();
    let consumer = consumer.map(|id| &*id.hyphenated().encode_lower(&mut id_text));
    svc.balancer.hash(&PickInput {
        client_ip: Some(routed.client_ip),
        headers: Some(&parts.headers),
        consumer,
        path: routed
            .normalized
            .as_deref()
            .unwrap_or(routed.original.path()),
        query: routed.original.query(),
        captures,
    })
}
