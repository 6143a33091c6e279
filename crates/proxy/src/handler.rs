//! The request path's entry: load the snapshot, route, then the fast path (a route without plugins) or the
//! plugin path ([`crate::phases`]). See `docs/phases.md` for the phase chart.

use crate::error::{error_response, Negotiation, ProxyError};
use crate::exchange::{self, ConnInfo, Exchange, Routed};
use crate::metrics::{self, Finished, RouteMeter};
use crate::phases;
use crate::respond::Timings;
use crate::shared::Shared;
use crate::snapshot::{RouteInfo, Snapshot};
use crate::strict;
use crate::watchdog::{InFlight, Tracked};
use http::{request, Request, Response};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use sluice_metrics::Source;
use sluice_upstream::balancer::Hashed;
use sluice_upstream::body::{box_err, ProxyBody};
use sluice_upstream::request_id;
use sluice_upstream::wire::WireRequest;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Instant;

/// Serves one request on the snapshot that is live when it arrives.
///
/// Routing and building the upstream request run here, before the returned future exists, so that
/// future holds only what crosses the upstream wait. hyper and tokio move it into place on every
/// request (the bytes are memcpy per request), so its size is a cost of the hot path: keep cold or
/// large state out of it (the plugin path is boxed, connecting is boxed in the pool).
pub fn handle(
    req: Request<Incoming>,
    conn: Arc<ConnInfo>,
    shared: Arc<Shared>,
    in_flight: InFlight,
) -> impl Future<Output = Response<Tracked>> + Send + 'static {
    let started = Instant::now();
    let snap = shared.snapshot.load_full();
    let id = request_id::next();
    let step = prepare(req, &conn, &shared, &snap, id, started);
    async move {
        let resp = match step {
            Step::Done(resp) => resp,
            Step::Plugins(run) => run.await,
            Step::Fast(fast) => {
                let x = Exchange {
                    shared: &shared,
                    conn: &conn,
                    request_id: request_id::as_str(&id),
                    started,
                };
                fast.run(&snap, &x).await
            }
        };
        resp.map(|body| Tracked::new(body, in_flight))
    }
}

/// What is left to do once a request is routed.
enum Step {
    /// Answered without the upstream (no route, a bad request).
    Done(Response<ProxyBody>),
    /// A route without plugins: straight to the upstream.
    Fast(FastPath),
    /// Boxed: the plugin path's state machine is large and most requests don't take it.
    Plugins(Pin<Box<dyn Future<Output = Response<ProxyBody>> + Send>>),
}

fn prepare(
    req: Request<Incoming>,
    conn: &Arc<ConnInfo>,
    shared: &Arc<Shared>,
    snap: &Arc<Snapshot>,
    id: [u8; 32],
    started: Instant,
) -> Step {
    let x = Exchange {
        shared,
        conn,
        request_id: request_id::as_str(&id),
        started,
    };
    let (mut parts, body) = req.into_parts();
    if let Err(malformed) = strict::check(&mut parts) {
        return Step::Done(error_response(
            malformed.into(),
            &Negotiation::of(&parts),
            &x,
        ));
    }
    let routed = match exchange::route(&mut parts, snap, &x) {
        Ok(r) => r,
        Err(e) => {
            let meter = snap.unrouted_metrics.as_ref();
            let bytes_in = meter.map_or(0, |_| metrics::content_length(&parts.headers));
            let resp = phases::unrouted(e, parts, snap, &x);
            record(meter, &resp, Source::Error, started, None, bytes_in);
            return Step::Done(resp);
        }
    };
    if !snap.plugins.route_chain(routed.found.id).is_empty() {
        return Step::Plugins(Box::pin(phases::run(
            parts,
            body,
            routed,
            snap.clone(),
            shared.clone(),
            conn.clone(),
            id,
            started,
        )));
    }
    let negotiation = Negotiation::of(&parts);
    let route = routed.found.id;
    let info = snap.routes.get(route);
    let meter = info.and_then(|r| r.metrics.as_ref());
    let bytes_in = meter.map_or(0, |_| metrics::content_length(&parts.headers));
    match FastPath::upstream_request(&parts, body, routed, info, snap, &x) {
        Ok((req, hashed, service)) => Step::Fast(FastPath {
            req,
            hashed,
            route,
            service,
            negotiation,
            bytes_in,
        }),
        Err(e) => {
            let resp = error_response(e, &negotiation, &x);
            record(meter, &resp, Source::Error, started, None, bytes_in);
            Step::Done(resp)
        }
    }
}

/// A routed request on a route without plugins, its upstream request already written: what the
/// upstream wait needs, and no more (the client's head was dropped).
struct FastPath {
    req: WireRequest,
    hashed: Hashed,
    /// Indices into the snapshot the request was routed on.
    route: usize,
    service: usize,
    negotiation: Negotiation,
    bytes_in: u64,
}

impl FastPath {
    /// Writes the upstream request; returns it with the balancer's hash input and the service index.
    fn upstream_request(
        parts: &request::Parts,
        body: Incoming,
        routed: Routed,
        info: Option<&RouteInfo>,
        snap: &Snapshot,
        x: &Exchange<'_>,
    ) -> Result<(WireRequest, Hashed, usize), ProxyError> {
        let info = info.ok_or(ProxyError::Internal)?;
        let service = info.service.ok_or(ProxyError::NoService)?;
        let svc = snap.services.get(service).ok_or(ProxyError::NoService)?;
        let body = body.map_err(box_err).boxed();
        let captures = routed.found.captures.as_ref();
        let hashed = exchange::hash_request(svc, parts, &routed, None, captures);
        let req = exchange::upstream_request(parts, body, routed, info, svc, x)?;
        Ok((req, hashed, service))
    }

    /// Proxies, then answers with the upstream's response (its body streamed) or the gateway's error.
    async fn run(self, snap: &Snapshot, x: &Exchange<'_>) -> Response<ProxyBody> {
        let (Some(info), Some(svc)) =
            (snap.routes.get(self.route), snap.services.get(self.service))
        else {
            return error_response(ProxyError::Internal, &self.negotiation, x);
        };
        let (resp, source, timings) =
            match exchange::proxy(self.req, info, svc, x, self.hashed, x.started).await {
                Ok(p) => (
                    Response::from_parts(p.head, p.body.boxed()),
                    Source::Service,
                    Some(p.timings),
                ),
                Err(e) => (error_response(e, &self.negotiation, x), Source::Error, None),
            };
        let meter = info.metrics.as_ref();
        record(
            meter,
            &resp,
            source,
            x.started,
            timings.as_ref(),
            self.bytes_in,
        );
        resp
    }
}

/// Counts a finished request in its route's (or the unrouted) series, when prometheus applies.
fn record(
    meter: Option<&RouteMeter>,
    resp: &Response<ProxyBody>,
    source: Source,
    started: Instant,
    timings: Option<&Timings>,
    bytes_in: u64,
) {
    if let Some(m) = meter {
        let finished = Finished {
            source,
            started,
            timings,
            bytes_in,
            consumer: None,
        };
        m.record(resp.status().as_u16(), resp.headers(), finished);
    }
}
