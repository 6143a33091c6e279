//! The plugin path: `rewrite`/`access`, the upstream, `header_filter`, `body_filter` per chunk, and `log`
//! once the response has been sent (or the client went away).
//!
//! A [`RequestCtx`] borrows from the snapshot, and the later phases run after the handler has returned the
//! response head to hyper. A chain that filters bodies runs in a task that owns the snapshot: it hands the
//! head over through a oneshot channel and keeps feeding the body through [`ChannelBody`]. A chain that only
//! logs runs inline: its context is detached from the snapshot and the log phase runs when hyper drops the
//! response body ([`logged`]). Routes without plugins never come here.

mod ctx;
mod logged;
mod streaming;

pub use ctx::unrouted;
use ctx::{add_headers, new_ctx};

use crate::error::{error_parts, error_response, Negotiation, ProxyError};
use crate::exchange::{self, ConnInfo, Exchange, Proxied, Routed};
use crate::respond;
use crate::shared::Shared;
use crate::snapshot::Snapshot;
use bytes::Bytes;
use http::{request, Response};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use sluice_metrics::Source;
use sluice_plugins::{PluginChain, PluginResponse, RequestCtx};
use sluice_upstream::body::{box_err, full, ChannelBody, ProxyBody};
use sluice_upstream::pooled::PooledBody;
use sluice_upstream::request_id;
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::oneshot;

/// Largest request body buffered for a plugin that reads it (`key_in_body`, `echo`).
const MAX_BUFFERED_BODY: usize = 8 << 20;

/// Runs a routed request through its plugin chain and returns the response. When some plugin filters bodies
/// or logs, the chain runs in a task of its own (which owns the snapshot and outlives this call) and the head
/// comes back as soon as it is known; otherwise everything runs inline and the upstream body is returned
/// as is.
#[allow(clippy::too_many_arguments)]
pub async fn run(
    parts: request::Parts,
    body: Incoming,
    routed: Routed,
    snap: Arc<Snapshot>,
    shared: Arc<Shared>,
    conn: Arc<ConnInfo>,
    id: [u8; 32],
    started: Instant,
) -> Response<ProxyBody> {
    if !snap.plugins.route_chain(routed.found.id).has_body_filter() {
        let x = Exchange {
            shared: &shared,
            conn: &conn,
            request_id: request_id::as_str(&id),
            started,
        };
        let mut routed = routed;
        let index = routed.found.id;
        let captures = routed.found.captures.take();
        let done = through_header_filter(parts, body, routed, captures.as_ref(), &snap, &x).await;
        if !done.chain.has_log() {
            return match done.payload {
                Payload::Whole(bytes) => Response::from_parts(done.head, full(bytes)),
                Payload::Streamed { body, .. } => Response::from_parts(done.head, body.boxed()),
            };
        }
        // A clone: `done` borrows the captures (None for routes without regex captures, so usually free).
        return logged::respond(done, index, captures.clone(), snap.clone(), id);
    }
    let (head_tx, head_rx) = oneshot::channel();
    let negotiation = Negotiation::of(&parts);
    let (task_shared, task_conn) = (shared.clone(), conn.clone());
    tokio::spawn(async move {
        let x = Exchange {
            shared: &task_shared,
            conn: &task_conn,
            request_id: request_id::as_str(&id),
            started,
        };
        serve(parts, body, routed, &snap, &x, head_tx).await;
    });
    match head_rx.await {
        Ok(resp) => resp,
        Err(_) => {
            let x = Exchange {
                shared: &shared,
                conn: &conn,
                request_id: request_id::as_str(&id),
                started,
            };
            error_response(ProxyError::Internal, &negotiation, &x)
        }
    }
}

/// The body of the response, by who made it.
// Built once per request and consumed at once: boxing the large variant would only add an allocation.
#[allow(clippy::large_enum_variant)]
enum Payload {
    Whole(Bytes),
    Streamed {
        body: PooledBody,
        upstream: streaming::Upstream,
    },
}

/// What the request produced before `header_filter`.
#[allow(clippy::large_enum_variant)]
enum Outcome {
    Plugin(PluginResponse),
    Upstream(Proxied, Option<http::uri::PathAndQuery>),
    Failed(ProxyError),
}

/// A request taken through `rewrite`/`access`, the upstream (or a plugin's answer) and `header_filter`.
struct HeadDone<'a> {
    ctx: RequestCtx<'a>,
    chain: &'a PluginChain,
    head: http::response::Parts,
    payload: Payload,
    source: &'static str,
}

async fn through_header_filter<'a>(
    parts: request::Parts,
    body: Incoming,
    routed: Routed,
    captures: Option<&'a sluice_router::Captures>,
    snap: &'a Snapshot,
    x: &'a Exchange<'a>,
) -> HeadDone<'a> {
    let index = routed.found.id;
    let chain = snap.plugins.route_chain(index);
    let negotiation = Negotiation::of(&parts);
    let mut ctx = new_ctx(parts, snap, x, Some(index), routed.client_ip);
    ctx.captures = captures;
    let meter = snap.routes.get(index).and_then(|r| r.metrics.as_ref());
    // Read before `access`: the request head may go upstream (moved) afterwards.
    let bytes_in = meter.map_or(0, |_| crate::metrics::content_length(&ctx.request.headers));
    let outcome = access_and_proxy(&mut ctx, chain, body, routed, snap, x).await;
    let by_plugin = matches!(outcome, Outcome::Plugin(_));
    let (mut head, payload, source) = match outcome {
        Outcome::Plugin(resp) => {
            let mut r = Response::new(());
            (*r.status_mut(), *r.headers_mut()) = (resp.status, resp.headers);
            (r.into_parts().0, Payload::Whole(resp.body), "plugin")
        }
        Outcome::Upstream(p, uri) => {
            let payload = Payload::Streamed {
                body: p.body,
                upstream: streaming::Upstream {
                    timings: p.timings,
                    tries: p.tries,
                    uri,
                },
            };
            (p.head, payload, "upstream")
        }
        Outcome::Failed(e) => {
            let (head, bytes) = error_parts(e, &negotiation, x).into_parts();
            (head, Payload::Whole(bytes), "gateway")
        }
    };
    add_headers(&mut head.headers, std::mem::take(&mut ctx.response_headers));
    chain.header_filter(&mut ctx, &mut head);
    if let Some(m) = meter {
        let (source, timings) = match &payload {
            Payload::Streamed { upstream, .. } => (Source::Service, Some(&upstream.timings)),
            Payload::Whole(_) if by_plugin => (Source::Exit, None),
            Payload::Whole(_) => (Source::Error, None),
        };
        let consumer = ctx
            .consumer
            .filter(|_| m.per_consumer())
            .and_then(|c| snap.consumer_slots.get(&c.id).copied());
        let finished = crate::metrics::Finished {
            source,
            started: x.started,
            timings,
            bytes_in,
            consumer,
        };
        m.record(head.status.as_u16(), &head.headers, finished);
    }
    if by_plugin {
        respond::gateway_response(
            &mut head.headers,
            x.shared.settings.headers,
            x.request_id,
            x.started,
        );
    }
    HeadDone {
        ctx,
        chain,
        head,
        payload,
        source,
    }
}

/// The task of a chain that filters bodies or logs: sends the head as soon as it is known, then feeds the
/// body through the filters and runs the log phase after the last byte.
async fn serve(
    parts: request::Parts,
    body: Incoming,
    mut routed: Routed,
    snap: &Snapshot,
    x: &Exchange<'_>,
    head_tx: oneshot::Sender<Response<ProxyBody>>,
) {
    let captures = routed.found.captures.take();
    let HeadDone {
        mut ctx,
        chain,
        mut head,
        payload,
        source,
    } = through_header_filter(parts, body, routed, captures.as_ref(), snap, x).await;
    let filtering = chain.has_body_filter() && ctx.request.method != http::Method::HEAD;
    if filtering {
        head.headers.remove(http::header::CONTENT_LENGTH);
    }
    let log = streaming::LogFacts::new(&head, source, x.started);
    match payload {
        Payload::Whole(mut bytes) => {
            if filtering {
                chain.body_filter(&mut ctx, &mut bytes, true);
            }
            let sent = bytes.len() as u64;
            let _ = head_tx.send(Response::from_parts(head, full(bytes)));
            chain.log(&ctx, &log.record(&ctx, sent, None));
        }
        Payload::Streamed { body, upstream } => {
            let (tx, channel) = ChannelBody::channel();
            let _ = head_tx.send(Response::from_parts(head, channel.boxed()));
            let sent = streaming::pump(body, tx, chain, &mut ctx, filtering).await;
            let record = log.record(&ctx, sent, Some(upstream));
            chain.log(&ctx, &record);
        }
    }
}

/// `rewrite`/`access`, then the upstream unless a plugin answered.
async fn access_and_proxy(
    ctx: &mut RequestCtx<'_>,
    chain: &PluginChain,
    body: Incoming,
    routed: Routed,
    snap: &Snapshot,
    x: &Exchange<'_>,
) -> Outcome {
    let mut upstream_body = body.map_err(box_err).boxed();
    if chain.needs_request_body() {
        match streaming::read_body(upstream_body, MAX_BUFFERED_BODY).await {
            Ok(bytes) => ctx.body = Some(bytes),
            Err(e) => return Outcome::Failed(e),
        }
        upstream_body = full(Bytes::new());
    }
    if let Some(resp) = chain.access(ctx).await {
        return Outcome::Plugin(resp);
    }
    let Some(info) = snap.routes.get(routed.found.id) else {
        return Outcome::Failed(ProxyError::Internal);
    };
    let Some(svc) = info.service.and_then(|s| snap.services.get(s)) else {
        return Outcome::Failed(ProxyError::NoService);
    };
    if let Some(buffered) = &ctx.body {
        upstream_body = full(buffered.clone());
    }
    // The consumer id as text on the stack: formatted per request, never allocated.
    let hashed = {
        let mut id_text = uuid::Uuid::encode_buffer();
        let consumer = ctx
            .consumer
            .map(|c| &*c.id.hyphenated().encode_lower(&mut id_text));
        exchange::hash_request(svc, &ctx.request, &routed, consumer, ctx.captures)
    };
    let req = match exchange::upstream_request(&ctx.request, upstream_body, routed, info, svc, x) {
        Ok(req) => req,
        Err(e) => return Outcome::Failed(e),
    };
    let uri = chain
        .has_log()
        .then(|| http::uri::PathAndQuery::try_from(req.target()).ok())
        .flatten();
    match exchange::proxy(req, info, svc, x, hashed, Instant::now()).await {
        Ok(p) => Outcome::Upstream(p, uri),
        Err(e) => Outcome::Failed(e),
    }
}
