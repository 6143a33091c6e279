//! The request path's entry: load the snapshot, route, then the fast path (a route without plugins) or the
//! plugin path ([`crate::phases`]). See `docs/phases.md` for the phase chart.

use crate::body::{box_err, full, ProxyBody};
use crate::error::ProxyError;
use crate::exchange::{self, ConnInfo, Exchange, Routed};
use crate::metrics::{self, Finished};
use crate::phases;
use crate::request_id;
use crate::respond::{self, Timings};
use crate::server::Shared;
use crate::snapshot::Snapshot;
use http::header::{HeaderValue, ACCEPT, CONTENT_TYPE};
use http::{request, Request, Response};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use sluice_metrics::Source;
use std::sync::Arc;
use std::time::Instant;

/// Serves one request on the snapshot that is live when it arrives.
pub async fn handle(
    req: Request<Incoming>,
    conn: ConnInfo,
    shared: Arc<Shared>,
) -> Response<ProxyBody> {
    let started = Instant::now();
    let snap = shared.snapshot.load_full();
    let id = request_id::next();
    let x = Exchange {
        shared: &shared,
        conn,
        request_id: request_id::as_str(&id),
        started,
    };
    let (mut parts, body) = req.into_parts();
    let routed = match exchange::route(&mut parts, &snap, &x) {
        Ok(r) => r,
        Err(e) => {
            let meter = snap.unrouted_metrics.as_ref();
            let bytes_in = meter.map_or(0, |_| metrics::content_length(&parts.headers));
            let resp = phases::unrouted(e, parts, &snap, &x);
            if let Some(m) = meter {
                let finished = Finished {
                    source: Source::Error,
                    started,
                    timings: None,
                    bytes_in,
                    consumer: None,
                };
                m.record(resp.status().as_u16(), resp.headers(), finished);
            }
            return resp;
        }
    };
    if snap.plugins.route_chain(routed.found.id).is_empty() {
        let negotiation = Negotiation::of(&parts);
        let meter = snap
            .routes
            .get(routed.found.id)
            .and_then(|r| r.metrics.as_ref());
        let bytes_in = meter.map_or(0, |_| metrics::content_length(&parts.headers));
        let (resp, source, timings) = match fast_path(parts, body, routed, &snap, &x).await {
            Ok((resp, timings)) => (resp, Source::Service, Some(timings)),
            Err(e) => (error_response(e, &negotiation, &x), Source::Error, None),
        };
        if let Some(m) = meter {
            let finished = Finished {
                source,
                started,
                timings: timings.as_ref(),
                bytes_in,
                consumer: None,
            };
            m.record(resp.status().as_u16(), resp.headers(), finished);
        }
        resp
    } else {
        // Boxed: the plugin path's state machine is large, and keeping it out of this future keeps the
        // fast path's future small (hyper moves it into place on every request).
        Box::pin(phases::run(
            parts,
            body,
            routed,
            snap.clone(),
            shared.clone(),
            x.conn.clone(),
            id,
            started,
        ))
        .await
    }
}

/// A route without plugins: straight to the upstream, the body streamed both ways.
async fn fast_path(
    parts: request::Parts,
    body: Incoming,
    routed: Routed,
    snap: &Snapshot,
    x: &Exchange<'_>,
) -> Result<(Response<ProxyBody>, Timings), ProxyError> {
    let info = snap
        .routes
        .get(routed.found.id)
        .ok_or(ProxyError::Internal)?;
    let svc = info
        .service
        .and_then(|s| snap.services.get(s))
        .ok_or(ProxyError::NoService)?;
    let body = body.map_err(box_err).boxed();
    let captures = routed.found.captures.as_ref();
    let hashed = exchange::hash_request(svc, &parts, &routed, None, captures);
    let req = exchange::upstream_request(&parts, body, routed, info, svc, x)?;
    let proxied = exchange::proxy(req, info, svc, x, hashed).await?;
    let timings = proxied.timings;
    Ok((
        Response::from_parts(proxied.head, proxied.body.boxed()),
        timings,
    ))
}

/// The request headers an error body is negotiated from.
pub struct Negotiation {
    accept: Option<HeaderValue>,
    content_type: Option<HeaderValue>,
}

impl Negotiation {
    pub fn of(parts: &request::Parts) -> Negotiation {
        Negotiation {
            accept: parts.headers.get(ACCEPT).cloned(),
            content_type: parts.headers.get(CONTENT_TYPE).cloned(),
        }
    }
}

/// A gateway-made error response with Kong's headers; upstream failures are logged.
pub fn error_response(err: ProxyError, n: &Negotiation, x: &Exchange<'_>) -> Response<ProxyBody> {
    if matches!(
        err,
        ProxyError::BadGateway | ProxyError::Timeout | ProxyError::Internal
    ) {
        tracing::warn!(request_id = x.request_id, error = %err, "upstream failure");
    }
    let mut resp = err
        .into_response(n.accept.as_ref(), n.content_type.as_ref(), x.request_id)
        .map(full);
    respond::gateway_response(
        resp.headers_mut(),
        x.shared.settings.headers,
        x.request_id,
        x.started,
    );
    resp
}
