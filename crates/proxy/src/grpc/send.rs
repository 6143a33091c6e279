//! Balance and send for gRPC: the upstream request made from the plugins' edited head (as Kong's `@grpc`
//! location sets it: `X-Forwarded-*`, `X-Real-IP`, `Via`, `TE: trailers` kept, `:authority` the
//! target's unless `preserve_host`), sent as one HTTP/2 stream on the worker's connection to the picked
//! target ([`sluice_upstream::h2`]).
//!
//! A try that cannot connect is retried on another target up to the service's `retries`, as nginx does;
//! once the stream is open the request body is the upstream's, so nothing after that is retried. The
//! response head must come within `read_timeout` of sending, and the upstream must keep taking the
//! request body within `write_timeout` ([`h2::WriteWatch`]); 504 otherwise.

use crate::error::ProxyError;
use crate::exchange::{self, Exchange, Routed};
use crate::respond::Timings;
use crate::snapshot::Snapshot;
use crate::upstream::{self, Tries};
use http::header::{HeaderMap, HeaderValue, CONNECTION, HOST, TE, VIA};
use http::{Request, Uri, Version};
use hyper::body::Incoming;
use sluice_plugins::{RequestCtx, TryRecord};
use sluice_upstream::body::ProxyBody;
use sluice_upstream::conn::TlsTarget;
use sluice_upstream::forward::{self, appended, via_token};
use sluice_upstream::h2;
use sluice_upstream::health::{Failure, InFlight};
use sluice_upstream::names;
use std::time::{Duration, Instant};

/// The most fields the gateway adds to a call's upstream request (`X-Forwarded-*`, `X-Real-IP`, `Via`,
/// `X-Kong-Request-Id`).
const FORWARDING: usize = 10;

/// The upstream's answer: its decorated head, its body (trailers included), and what the log needs.
pub struct Sent {
    pub head: http::response::Parts,
    pub body: Incoming,
    pub timings: Timings,
    pub tries: Tries,
    /// The service's read timeout, between two frames of the body.
    pub read_timeout: Duration,
    /// Counts the call against its target until it ends (balancers that read load).
    pub inflight: Option<InFlight>,
    /// Keeps the upstream connection from being closed as idle until the call ends.
    pub lease: h2::Lease,
    /// The service's `write_timeout` on the rest of the request body.
    pub write_watch: h2::WriteWatch,
}

/// Sends the call with Kong's retries on connect failures.
pub async fn send(
    ctx: &RequestCtx<'_>,
    body: ProxyBody,
    routed: Routed,
    snap: &Snapshot,
    x: &Exchange<'_>,
) -> Result<Sent, ProxyError> {
    let info = snap
        .routes
        .get(routed.found.id)
        .ok_or(ProxyError::Internal)?;
    let svc = info
        .service
        .and_then(|s| snap.services.get(s))
        .ok_or(ProxyError::NoService)?;
    let consumer = ctx.consumer.map(|c| &c.id);
    let hashed = exchange::hash_request(svc, &ctx.request, &routed, consumer, ctx.captures).value;
    let headers = upstream_headers(&ctx.request.headers, routed, x);
    let target = ctx.request.uri.path_and_query().cloned();
    let started = Instant::now();
    let (mut tried, mut failed) = (Vec::new(), Vec::new());
    let mut tries = 0;
    let (pick, addr, try_started, (sender, lease), host) = loop {
        let try_started = Instant::now();
        let pick = svc
            .balancer
            .pick(hashed, &tried)
            .ok_or(ProxyError::NoPeer)?;
        tried.push(pick.index);
        let peer = &pick.target.peer;
        let addr = peer.resolve().await?;
        let host = match (info.preserve_host, ctx.request.headers.get(HOST)) {
            (true, Some(h)) => h.clone(),
            _ => peer.host_header.clone(),
        };
        let (key, tls) = upstream::pool_key(svc, addr, &host, &peer.host);
        let tls = tls.as_ref().map(|(tls, name)| TlsTarget {
            tls,
            server_name: name,
        });
        match h2::sender(key, tls, svc.connect_timeout).await {
            Ok(sender) => break (pick, addr, try_started, sender, host),
            Err(e) => {
                let e = ProxyError::from(e);
                upstream::report(
                    svc,
                    &pick.target.name,
                    &pick.target.state,
                    Err(upstream::failure(&e)),
                );
                if tries >= svc.retries {
                    return Err(e);
                }
                failed.push(TryRecord {
                    addr,
                    started: try_started,
                    latency: try_started.elapsed(),
                    failed: Some(e.status().as_u16()),
                });
                tries += 1;
            }
        }
    };
    let scheme = if svc.tls.is_some() { "https" } else { "http" };
    let uri = Uri::builder()
        .scheme(scheme)
        .authority(host.as_bytes())
        .path_and_query(target.unwrap_or_else(|| http::uri::PathAndQuery::from_static("/")))
        .build()
        .map_err(|_| ProxyError::BadRequest)?;
    let (body, mut write_watch) = h2::watch(body, svc.write_timeout);
    let mut req = Request::new(body);
    *req.method_mut() = ctx.request.method.clone();
    *req.uri_mut() = uri;
    *req.version_mut() = Version::HTTP_2;
    *req.headers_mut() = headers;
    let state = &pick.target.state;
    let inflight = svc.balancer.tracks_load().then(|| state.start());
    let mut sender = sender;
    let sent_at = Instant::now();
    let call = async {
        sender.ready().await?;
        // Handed to the connection here (hyper queues it before the first poll); driven on at once.
        let answer = sender.send_request(req);
        lease.drive_now();
        answer.await
    };
    let report = |outcome| upstream::report(svc, &pick.target.name, state, outcome);
    // The head within `read_timeout`, while the upstream keeps taking the body within `write_timeout`.
    let answered = tokio::select! {
        answered = tokio::time::timeout(svc.read_timeout, call) => answered.ok(),
        () = write_watch.stalled() => None,
    };
    let response = match answered {
        None => {
            report(Err(Failure::Timeout));
            return Err(ProxyError::Timeout);
        }
        Some(Err(e)) => {
            tracing::debug!(%addr, error = %e, "upstream h2 request failed");
            report(Err(Failure::Tcp));
            return Err(ProxyError::BadGateway);
        }
        Some(Ok(r)) => r,
    };
    report(Ok(response.status().as_u16()));
    let timings = Timings {
        proxy: started.saturating_duration_since(x.started),
        upstream: sent_at.elapsed(),
    };
    let (head, body) = response.into_parts();
    let via = appended(&head.headers, VIA, via_token(Version::HTTP_2));
    let mut head = exchange::decorated(head.status, head.version, head.headers, None, x, timings);
    // Kong's `Via` names HTTP/2 for gRPC (`decorated` names HTTP/1.1's).
    if x.shared.settings.headers.via {
        head.headers.insert(VIA, via);
    }
    let answered = TryRecord {
        addr,
        started: try_started,
        latency: sent_at.saturating_duration_since(try_started),
        failed: None,
    };
    Ok(Sent {
        head,
        body,
        timings,
        tries: Tries { failed, answered },
        read_timeout: svc.read_timeout,
        inflight,
        lease,
        write_watch,
    })
}

/// The upstream request's headers: the client's (plugin-edited) ones without hop-by-hop fields (but
/// `TE: trailers`) and `Host` (HTTP/2 sends `:authority`), then Kong's forwarding headers.
///
/// Made in one map of the final size, in one pass over the client's fields: cloning the client's map
/// and then removing and inserting grew it twice and hashed every name removed (~8k instructions a
/// call, callgrind).
fn upstream_headers(client: &HeaderMap, routed: Routed, x: &Exchange<'_>) -> HeaderMap {
    let request_id = x.shared.settings.upstream_request_id;
    // Rare: the fields the client's `Connection` names (there is none in HTTP/2).
    let named = match client.contains_key(CONNECTION) {
        true => forward::connection_named(client),
        false => Vec::new(),
    };
    let mut headers = HeaderMap::with_capacity(client.len() + FORWARDING);
    for (name, value) in client {
        let dropped = name == HOST
            || forward::is_hop_by_hop(name)
            || (name == TE && !value.as_bytes().eq_ignore_ascii_case(b"trailers"))
            || forward::replaced(name.as_str())
            || (request_id && name == crate::names::X_KONG_REQUEST_ID.name)
            || named.contains(name);
        if !dropped {
            headers.append(name.clone(), value.clone());
        }
    }
    let f = routed.forwarded;
    // Usually the client sent neither: the peer's address and the token alone, no new string.
    let xff = match client.contains_key(names::X_FORWARDED_FOR) {
        true => appended(
            client,
            names::X_FORWARDED_FOR,
            x.conn.peer_ip.to_str().unwrap_or(""),
        ),
        false => x.conn.peer_ip.clone(),
    };
    let via = match client.contains_key(VIA) {
        true => appended(client, VIA, via_token(routed.version)),
        false => HeaderValue::from_static(via_token(routed.version)),
    };
    let real_ip = match routed.client_ip == x.conn.peer.ip() {
        true => x.conn.peer_ip.clone(),
        false => {
            HeaderValue::from_str(&routed.client_ip.to_string()).unwrap_or(x.conn.peer_ip.clone())
        }
    };
    let (host, path) = f.host_and_path();
    headers.append(names::X_FORWARDED_FOR, xff);
    headers.append(names::X_REAL_IP, real_ip);
    headers.append(names::X_FORWARDED_PROTO, f.proto);
    headers.append(names::X_FORWARDED_HOST, host);
    headers.append(names::X_FORWARDED_PORT, f.port);
    headers.append(names::X_FORWARDED_PATH, path);
    if let Some(p) = f.prefix {
        headers.append(names::X_FORWARDED_PREFIX, p);
    }
    headers.append(VIA, via);
    if request_id {
        let id = crate::respond::request_id_value(x.request_id);
        headers.append(crate::names::X_KONG_REQUEST_ID.name, id);
    }
    headers
}
