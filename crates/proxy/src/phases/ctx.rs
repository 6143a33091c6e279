//! The per-request plugin context: building it before routing (a global rewrite), once a request is routed
//! or found no route, and moving
//! headers and request heads in and out of it.

use super::{header_filter, whole, Outcome};
use crate::error::{error_response, Negotiation, ProxyError};
use crate::exchange::Exchange;
use crate::snapshot::Snapshot;
use http::{request, Response};
use sluice_model::{Route, Service};
use sluice_plugins::{AddedHeaders, RequestCtx};
use sluice_upstream::body::ProxyBody;
use std::time::SystemTime;

/// A request without a route: the error, plus `header_filter`, `body_filter` and `log` of the global
/// plugins.
pub fn unrouted(
    err: ProxyError,
    parts: request::Parts,
    snap: &Snapshot,
    x: &Exchange<'_>,
) -> Response<ProxyBody> {
    let negotiation = Negotiation::of(&parts);
    let chain = snap.plugins.global_chain();
    if chain.is_empty() {
        return error_response(err, &negotiation, x);
    }
    let client_ip = x.shared.trust.client_ip(&parts.headers, x.conn.peer.ip());
    let ctx = new_ctx(parts, snap, x, None, client_ip);
    whole(header_filter(
        ctx,
        chain,
        Outcome::Failed(err),
        &negotiation,
        x,
    ))
}

/// Response headers that global `rewrite` handlers added before routing, carried in the request's
/// extensions into the context built after routing ([`super::rewrite`]).
#[derive(Clone)]
pub(super) struct FromRewrite(pub AddedHeaders);

/// The plugin context of a request; `route` is its index in the snapshot (None before routing or
/// without a route).
pub fn new_ctx<'s>(
    mut request: request::Parts,
    snap: &'s Snapshot,
    x: &Exchange<'s>,
    route: Option<usize>,
    client_ip: std::net::IpAddr,
) -> RequestCtx<'s> {
    let (route, service) = route_and_service(snap, route);
    let response_headers = request
        .extensions
        .remove::<FromRewrite>()
        .map_or_else(AddedHeaders::new, |added| added.0);
    RequestCtx {
        request,
        body: None,
        client_addr: x.conn.peer,
        client_ip,
        peer_trusted: x.conn.trusted,
        scheme: x.conn.scheme,
        tls: x.conn.tls,
        server_port: x.conn.port,
        request_id: x.request_id,
        route,
        service,
        captures: None,
        consumer: None,
        credential: None,
        anonymous: false,
        credentials: snap.plugins.credentials(),
        body_limit: None,
        response_headers,
        started: x.started,
        started_wall: SystemTime::now() - x.started.elapsed(),
        plugin_data: http::Extensions::new(),
    }
}

/// The route entity at `index` of the snapshot, and its service.
pub(super) fn route_and_service(
    snap: &Snapshot,
    index: Option<usize>,
) -> (Option<&Route>, Option<&Service>) {
    let config = snap.config();
    let service = index
        .and_then(|i| snap.routes.get(i))
        .and_then(|r| r.service)
        .and_then(|s| config.services.get(s));
    (index.and_then(|i| config.routes.get(i)), service)
}
