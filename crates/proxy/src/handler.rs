//! The request path: route, plugins, upstream, response. See `docs/phases.md` for the phase chart.

use crate::error::ProxyError;
use crate::forward::{self, Downstream};
use crate::path::upstream_path;
use crate::pool::{self, box_err, BoxError, PooledBody, UpstreamBody};
use crate::server::Shared;
use crate::snapshot::{ServiceInfo, Snapshot};
use crate::{request_id, PRODUCT};
use bytes::Bytes;
use http::header::{HeaderValue, HOST};
use http::{HeaderMap, Request, Response, Uri, Version};
use http_body_util::combinators::BoxBody;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use sluice_plugins::{LogRecord, PluginChain, PluginResponse, RequestCtx};
use sluice_router::RequestParts;
use std::net::SocketAddr;
use std::time::{Instant, SystemTime};

/// The body type of every response the proxy sends.
pub type ResponseBody = BoxBody<Bytes, BoxError>;

/// Largest request body buffered for a plugin that reads it (`key_in_body`, `echo`).
const MAX_BUFFERED_BODY: usize = 8 << 20;

/// Facts about the downstream connection.
#[derive(Clone, Copy)]
pub struct ConnInfo {
    pub peer: SocketAddr,
    pub local_port: u16,
    pub scheme: &'static str,
}

fn full(body: Bytes) -> ResponseBody {
    pool::full_body(body)
}

fn ms(d: std::time::Duration) -> String {
    d.as_millis().to_string()
}

fn insert(headers: &mut HeaderMap, name: &'static str, value: &str) {
    if let Ok(v) = HeaderValue::from_str(value) {
        headers.insert(name, v);
    }
}

/// Serves one request on the snapshot that is live when it arrives.
pub async fn handle(
    req: Request<Incoming>,
    conn: ConnInfo,
    shared: &Shared,
) -> Response<ResponseBody> {
    let started = Instant::now();
    let snapshot = shared.snapshot.load_full();
    let id_bytes = request_id::next();
    let request_id = std::str::from_utf8(&id_bytes).unwrap_or_default();
    let accept = req.headers().get(http::header::ACCEPT).cloned();
    match proxy(req, conn, shared, &snapshot, request_id, started).await {
        Ok(resp) => resp,
        Err(err) => {
            if matches!(
                err,
                ProxyError::BadGateway | ProxyError::Timeout | ProxyError::Internal
            ) {
                tracing::warn!(request_id, error = %err, "upstream failure");
            }
            let resp = err.into_response(accept.as_ref(), request_id).map(full);
            gateway_headers(resp, shared, request_id, started)
        }
    }
}

/// Headers on responses the gateway made itself (errors and plugin answers).
fn gateway_headers(
    mut resp: Response<ResponseBody>,
    shared: &Shared,
    request_id: &str,
    started: Instant,
) -> Response<ResponseBody> {
    let h = shared.settings.headers;
    let headers = resp.headers_mut();
    if h.server {
        headers.insert(http::header::SERVER, HeaderValue::from_static(PRODUCT));
    }
    if h.response_latency {
        insert(headers, "x-kong-response-latency", &ms(started.elapsed()));
    }
    if h.request_id {
        insert(headers, "x-kong-request-id", request_id);
    }
    resp
}

async fn proxy(
    req: Request<Incoming>,
    conn: ConnInfo,
    shared: &Shared,
    snap: &Snapshot,
    request_id: &str,
    started: Instant,
) -> Result<Response<ResponseBody>, ProxyError> {
    let (mut parts, body) = req.into_parts();
    let host = parts
        .headers
        .get(HOST)
        .and_then(|h| h.to_str().ok())
        .or_else(|| parts.uri.authority().map(|a| a.as_str()))
        .unwrap_or("")
        .to_string();
    let path = parts.uri.path().to_string();
    let found = snap.router.find(&RequestParts {
        method: parts.method.as_str(),
        host: &host,
        path: &path,
        headers: &parts.headers,
        sni: None,
    });
    let Some(found) = found else {
        return Err(ProxyError::NoRoute);
    };
    let info = &snap.routes[found.id];
    let route = &snap.config().routes[found.id];
    if conn.scheme == "http" && !info.accepts_http {
        if info.https_redirect_status == 426 {
            return Err(ProxyError::HttpsRequired);
        }
        let bare_host = host.rsplit_once(':').map_or(host.as_str(), |(h, _)| h);
        let pq = parts.uri.path_and_query().map_or("/", |p| p.as_str());
        return Err(ProxyError::HttpsRedirect {
            status: info.https_redirect_status,
            location: format!("https://{bare_host}{pq}"),
        });
    }
    let Some(service_index) = info.service else {
        return Err(ProxyError::NoService);
    };
    let svc = &snap.services[service_index];
    let service = &snap.config().services[service_index];
    let strip_len = if info.strip_path {
        found.matched_path.map_or(0, |m| m.len)
    } else {
        0
    };

    let trusted =
        |ip: std::net::IpAddr| shared.settings.trusted_ips.iter().any(|n| n.contains(&ip));
    let peer_trusted = trusted(conn.peer.ip());
    let client_ip = forward::client_ip(&parts.headers, conn.peer.ip(), &trusted);

    // Plugins: rewrite + access.
    let chain: &PluginChain = snap.plugins.route_chain(found.id);
    let mut upstream_body: UpstreamBody = body.map_err(box_err).boxed();
    let mut ctx = None;
    if !chain.is_empty() {
        let mut buffered = None;
        if chain.needs_request_body() {
            let collected = read_body(upstream_body).await?;
            upstream_body = pool::full_body(collected.clone());
            buffered = Some(collected);
        }
        let mut c = RequestCtx {
            request: parts,
            body: buffered,
            client_addr: conn.peer,
            client_ip,
            scheme: conn.scheme,
            request_id,
            route: Some(route),
            service: Some(service),
            captures: found.captures.as_ref(),
            consumer: None,
            credential: None,
            anonymous: false,
            credentials: snap.plugins.credentials(),
            response_headers: HeaderMap::new(),
            started,
            started_wall: SystemTime::now(),
        };
        if let Some(resp) = chain.access(&mut c).await {
            return Ok(plugin_response(
                resp, chain, &mut c, shared, request_id, started,
            ));
        }
        if let Some(body) = c.body.take() {
            upstream_body = pool::full_body(body);
        }
        parts = std::mem::replace(&mut c.request, Request::new(()).into_parts().0);
        ctx = Some(c);
    }

    // The upstream request.
    let up_path = upstream_path(svc.path.as_deref(), &path, strip_len, info.path_handling_v1);
    let pq = match parts.uri.query() {
        Some(q) => format!("{up_path}?{q}"),
        None => up_path,
    };
    parts.uri = pq
        .parse::<Uri>()
        .map_err(|_| ProxyError::BadRequest("invalid request path"))?;
    parts.version = Version::HTTP_11;
    forward::strip_hop_by_hop(&mut parts.headers);
    let stripped = (strip_len > 0).then(|| &path[..strip_len]);
    let downstream = Downstream {
        peer: conn.peer.ip(),
        trusted: peer_trusted,
        scheme: conn.scheme,
        listen_port: conn.local_port,
        host: &host,
        path: &path,
        stripped_prefix: stripped,
    };
    forward::add_forwarded(&mut parts.headers, &downstream, client_ip);
    if info.preserve_host {
        if !parts.headers.contains_key(HOST) {
            insert(&mut parts.headers, "host", &host);
        }
    } else if let Some(h) = &svc.host_header {
        insert(&mut parts.headers, "host", h);
    }
    if shared.settings.headers.request_id {
        insert(&mut parts.headers, "x-kong-request-id", request_id);
    }
    if svc.tls {
        tracing::error!(service = %service.id, "upstream TLS (protocol https) is not supported by this build yet");
        return Err(ProxyError::BadGateway);
    }

    let proxy_latency = started.elapsed();
    let (resp, conn_used, upstream_started) =
        send(Request::from_parts(parts, upstream_body), svc).await?;
    let upstream_latency = upstream_started.elapsed();

    let (mut rparts, incoming) = resp.into_parts();
    let reusable = !rparts
        .headers
        .get(http::header::CONNECTION)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.to_ascii_lowercase().contains("close"));
    forward::strip_hop_by_hop(&mut rparts.headers);
    let h = shared.settings.headers;
    if h.via {
        rparts.headers.append(
            http::header::VIA,
            HeaderValue::from_static(concat!("1.1 ", "sluice/", env!("CARGO_PKG_VERSION"))),
        );
    }
    if h.upstream_latency {
        insert(
            &mut rparts.headers,
            "x-kong-upstream-latency",
            &ms(upstream_latency),
        );
    }
    if h.proxy_latency {
        insert(
            &mut rparts.headers,
            "x-kong-proxy-latency",
            &ms(proxy_latency),
        );
    }
    if h.request_id {
        insert(&mut rparts.headers, "x-kong-request-id", request_id);
    }
    let upstream_addr = conn_used.addr;
    let body = PooledBody::new(incoming, conn_used, reusable)
        .map_err(box_err)
        .boxed();
    if let Some(mut c) = ctx {
        for (name, value) in c
            .response_headers
            .drain()
            .filter_map(|(n, v)| n.map(|n| (n, v)))
        {
            rparts.headers.insert(name, value);
        }
        chain.header_filter(&mut c, &mut rparts);
        let record = log_record(
            &rparts,
            "upstream",
            started,
            proxy_latency,
            Some(upstream_latency),
            Some(upstream_addr),
        );
        chain.log(&c, &record);
    }
    Ok(Response::from_parts(rparts, body))
}

/// Reads a whole request body, up to [`MAX_BUFFERED_BODY`].
async fn read_body(mut body: UpstreamBody) -> Result<Bytes, ProxyError> {
    let mut out = bytes::BytesMut::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|_| ProxyError::BadRequest("request body unreadable"))?;
        if let Ok(data) = frame.into_data() {
            if out.len() + data.len() > MAX_BUFFERED_BODY {
                return Err(ProxyError::BadRequest("request body too large"));
            }
            out.extend_from_slice(&data);
        }
    }
    Ok(out.freeze())
}

/// Sends the request, retrying on another target while nothing was sent (connect failures, a pooled
/// connection found closed), up to the service's `retries`.
async fn send(
    mut req: Request<UpstreamBody>,
    svc: &ServiceInfo,
) -> Result<(Response<Incoming>, pool::Conn, Instant), ProxyError> {
    let mut tries = 0;
    loop {
        let peer = svc.balancer.pick().ok_or(ProxyError::NoPeer)?;
        let addr = peer.resolve().await?;
        let mut conn = match pool::checkout(addr, svc.connect_timeout).await {
            Ok(c) => c,
            Err(e) if tries < svc.retries => {
                tracing::debug!(%addr, error = %e, tries, "connect failed, retrying");
                tries += 1;
                continue;
            }
            Err(e) => return Err(e),
        };
        if !conn.reused && conn.sender.ready().await.is_err() {
            tries += 1;
            if tries > svc.retries {
                return Err(ProxyError::BadGateway);
            }
            continue;
        }
        let started = Instant::now();
        let sending = conn.sender.try_send_request(req);
        match tokio::time::timeout(svc.read_timeout + svc.write_timeout, sending).await {
            Err(_) => return Err(ProxyError::Timeout),
            Ok(Ok(resp)) => return Ok((resp, conn, started)),
            Ok(Err(mut e)) => match e.take_message() {
                Some(back) if tries < svc.retries => {
                    req = back;
                    tries += 1;
                }
                _ => return Err(ProxyError::BadGateway),
            },
        }
    }
}

fn log_record(
    parts: &http::response::Parts,
    source: &'static str,
    started: Instant,
    kong: std::time::Duration,
    upstream: Option<std::time::Duration>,
    upstream_addr: Option<SocketAddr>,
) -> LogRecord {
    let length = parts
        .headers
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    LogRecord {
        status: parts.status.as_u16(),
        response_headers: parts.headers.clone(),
        request_bytes: 0,
        response_bytes: length,
        kong_latency_ms: kong.as_millis() as u64,
        upstream_latency_ms: upstream.map(|d| d.as_millis() as u64),
        request_latency_ms: started.elapsed().as_millis() as u64,
        upstream_addr,
        source,
    }
}

/// A plugin's early answer: response headers from the context, header_filter, then the log phase.
fn plugin_response(
    resp: PluginResponse,
    chain: &PluginChain,
    ctx: &mut RequestCtx<'_>,
    shared: &Shared,
    request_id: &str,
    started: Instant,
) -> Response<ResponseBody> {
    let mut response = Response::new(());
    *response.status_mut() = resp.status;
    *response.headers_mut() = resp.headers;
    for (name, value) in ctx
        .response_headers
        .drain()
        .filter_map(|(n, v)| n.map(|n| (n, v)))
    {
        response.headers_mut().insert(name, value);
    }
    let (mut parts, ()) = response.into_parts();
    chain.header_filter(ctx, &mut parts);
    let record = log_record(&parts, "plugin", started, started.elapsed(), None, None);
    chain.log(ctx, &record);
    gateway_headers(
        Response::from_parts(parts, full(resp.body)),
        shared,
        request_id,
        started,
    )
}
