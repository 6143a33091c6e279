//! The plugin phases, as steps of the request driver ([`crate::handler::handle`]). A global `rewrite`
//! runs before routing ([`rewrite`], only when some global instance has one). For a routed request whose
//! route has plugins the driver then calls, in order: [`access`], [`send`] (balance and send, with what
//! the plugins settled on), [`header_filter`], then `body_filter` per chunk and `log` once the response
//! has been sent or the client went away ([`respond`] inline, [`stream`] in a task), as one boxed future
//! ([`steps`]). Routes without plugins never come here. Routes whose plugins act in `access` only run it
//! before the driver's future exists and then take the fast path ([`access_first`]); chains that filter
//! bodies run it there too, so that a plugin's answer needs no task ([`in_task`] takes the rest).
//!
//! A [`RequestCtx`] borrows from the snapshot, and the later phases run after the driver has returned the
//! response head to hyper. A chain that filters bodies runs in a task that owns the snapshot: it hands the
//! head over through a oneshot channel and keeps feeding the body through [`ChannelBody`]. A chain that only
//! logs runs inline: its context is detached from the snapshot and the log phase runs when hyper drops the
//! response body ([`logged`]). A chain with nothing but log handlers skips the phases before that and
//! builds its context for the log phase only ([`log_only`]).

mod access_first;
mod ctx;
mod log_fields;
mod log_only;
mod logged;
mod rewrite;
mod steps;
mod streaming;
pub(crate) use access_first::{start as access_first, Added};
pub(crate) use steps::{in_task, steps, Begin};
pub use streaming::{pump, LogFacts, Upstream};

pub use ctx::{new_ctx, unrouted};
pub(crate) use log_only::start as log_only;
pub use rewrite::rewrite;

use crate::downstream::ClientBody;
use crate::error::{error_parts, Negotiation, ProxyError};
use crate::exchange::{Exchange, Late, Proxied, Routed, Sending};
use crate::handler::{Answer, Scope};
use crate::metrics::{Count, Finished, RouteMeter, Series};
use crate::respond;
use crate::snapshot::Snapshot;
use bytes::Bytes;
use http::Response;
use http_body_util::BodyExt;
use sluice_metrics::Source;
use sluice_plugins::{AccessNow, PluginChain, PluginResponse, RequestCtx};
use sluice_router::Captures;
use sluice_upstream::body::{box_err, full, Capped, ChannelBody, ProxyBody};
use sluice_upstream::readahead::UpstreamBody;
use std::time::Instant;
use tokio::sync::oneshot;

/// Largest request body buffered for a plugin that reads it (`key_in_body`, `echo`).
const MAX_BUFFERED_BODY: usize = 8 << 20;

/// The body of the response, by who made it.
// Built once per request and consumed at once: boxing the large variant would only add an allocation.
#[allow(clippy::large_enum_variant)]
enum Payload {
    Whole(Bytes),
    Streamed {
        body: UpstreamBody,
        upstream: streaming::Upstream,
    },
}

/// What the request produced before `header_filter`.
#[allow(clippy::large_enum_variant)]
pub enum Outcome {
    Plugin(PluginResponse),
    Upstream(Proxied, Option<String>),
    Failed(ProxyError),
}

/// A request taken through `access`, the upstream (or a plugin's answer) and `header_filter`.
pub struct HeadDone<'a> {
    ctx: RequestCtx<'a>,
    chain: &'a PluginChain,
    head: http::response::Parts,
    payload: Payload,
    source: Source,
}

/// What the plugin steps of a routed request look up first: its route's index, chain and metrics series
/// and meter, and its regex captures (taken out of the routing result, for the context to borrow).
pub(crate) struct RouteSteps<'s> {
    pub index: usize,
    pub chain: &'s PluginChain,
    pub series: Series,
    pub meter: Option<&'s RouteMeter>,
    pub captures: Option<Captures>,
}

impl<'s> RouteSteps<'s> {
    #[inline]
    pub(crate) fn of(routed: &mut Routed, snap: &'s Snapshot) -> RouteSteps<'s> {
        let index = routed.found.id;
        let series = Series(index);
        RouteSteps {
            index,
            chain: snap.plugins.route_chain(index),
            series,
            meter: series.meter(snap),
            captures: routed.found.captures.take(),
        }
    }
}

/// `access`, after reading the request body when some plugin reads it.
/// `Ok`: the body for the upstream (capped when a plugin set [`RequestCtx::body_limit`]); `Err`: the
/// request is answered (a plugin's answer, or a body that
/// could not be read).
/// `resume` is where [`access_first`] stopped (None: from the start).
pub async fn access(
    ctx: &mut RequestCtx<'_>,
    chain: &PluginChain,
    body: ClientBody,
    resume: Option<AccessNow>,
) -> Result<ProxyBody, Outcome> {
    let mut upstream_body = body.map_err(box_err).boxed();
    if resume.is_none() && chain.wants_request_body(&ctx.request) {
        match streaming::read_body(upstream_body, MAX_BUFFERED_BODY).await {
            Ok(bytes) => ctx.body = Some(bytes),
            Err(e) => return Err(Outcome::Failed(e)),
        }
        upstream_body = full(Bytes::new());
    }
    let now = match resume {
        Some(now) => now,
        None => chain.access_now(ctx, 0),
    };
    if let Some(resp) = chain.finish_access(ctx, now).await {
        return Err(Outcome::Plugin(resp));
    }
    if let Some(buffered) = &ctx.body {
        upstream_body = full(buffered.clone());
    } else if let Some(limit) = ctx
        .body_limit
        .filter(|_| !http_body::Body::is_end_stream(&upstream_body))
    {
        upstream_body = Capped::new(upstream_body, limit.bytes).boxed();
    }
    Ok(upstream_body)
}

/// Balance and send with what the plugins settled on: their edited request head, the consumer and the
/// captures feed the balancer's hash.
pub async fn send(
    ctx: &RequestCtx<'_>,
    chain: &PluginChain,
    body: ProxyBody,
    routed: Routed,
    snap: &Snapshot,
    x: &Exchange<'_>,
) -> Outcome {
    let (sending, uri) = match prepare(ctx, chain, body, routed, snap, x) {
        Ok(prepared) => prepared,
        Err(e) => return Outcome::Failed(e),
    };
    match sending.send(snap, x, Instant::now(), Late::No).await {
        Ok(p) => Outcome::Upstream(p, uri),
        Err(ProxyError::BodyOverLimit) => match ctx.body_limit {
            Some(limit) => Outcome::Plugin((limit.exceeded)(&ctx.request.headers)),
            None => Outcome::Failed(ProxyError::BodyOverLimit),
        },
        Err(e) => Outcome::Failed(e),
    }
}

/// The upstream request written from the plugins' edited head, with the upstream URI for the log phase
/// (only when a plugin logs).
pub fn prepare(
    ctx: &RequestCtx<'_>,
    chain: &PluginChain,
    body: ProxyBody,
    routed: Routed,
    snap: &Snapshot,
    x: &Exchange<'_>,
) -> Result<(Sending, Option<String>), ProxyError> {
    let consumer = ctx.consumer.map(|c| &c.id);
    let sending = Sending::prepare(&ctx.request, body, routed, consumer, ctx.captures, snap, x)?;
    let uri = chain.has_log().then(|| sending.target().to_owned());
    Ok((sending, uri))
}

/// `header_filter`: the response head (the upstream's, a plugin's answer or the gateway's error, made by
/// [`crate::error`]) with the headers plugins asked for, through the chain's handlers; a plugin's answer
/// then gets the gateway's headers.
pub fn header_filter<'a>(
    mut ctx: RequestCtx<'a>,
    chain: &'a PluginChain,
    outcome: Outcome,
    negotiation: &Negotiation,
    x: &Exchange<'_>,
) -> HeadDone<'a> {
    let by_plugin = matches!(outcome, Outcome::Plugin(_));
    let (mut head, payload, source) = match outcome {
        Outcome::Plugin(resp) => {
            let mut r = Response::new(());
            (*r.status_mut(), *r.headers_mut()) = (resp.status, resp.headers);
            (r.into_parts().0, Payload::Whole(resp.body), Source::Exit)
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
            (p.head, payload, Source::Service)
        }
        Outcome::Failed(e) => {
            let (head, bytes) = error_parts(e, negotiation, x).into_parts();
            (head, Payload::Whole(bytes), Source::Error)
        }
    };
    filter_head(&mut ctx, chain, &mut head);
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

/// The headers plugins asked for, then the chain's `header_filter` handlers, on a response head.
pub fn filter_head(
    ctx: &mut RequestCtx<'_>,
    chain: &PluginChain,
    head: &mut http::response::Parts,
) {
    std::mem::take(&mut ctx.response_headers).apply(&mut head.headers);
    chain.header_filter(ctx, head);
}

impl HeadDone<'_> {
    /// The request as the route's metrics see it once `header_filter` ran.
    pub fn observe(
        &self,
        meter: &RouteMeter,
        series: Series,
        snap: &Snapshot,
        bytes_in: u64,
        started: Instant,
    ) -> Count {
        let (source, timings) = match &self.payload {
            Payload::Streamed { upstream, .. } => (self.source, Some(&upstream.timings)),
            Payload::Whole(_) => (self.source, None),
        };
        let finished = Finished {
            source,
            started,
            timings,
            bytes_in,
            consumer: None,
        };
        observe(&self.ctx, &self.head, meter, series, snap, finished)
    }
}

/// The count of a request whose head is final, with its consumer when the meter counts per consumer.
pub(crate) fn observe(
    ctx: &RequestCtx<'_>,
    head: &http::response::Parts,
    meter: &RouteMeter,
    series: Series,
    snap: &Snapshot,
    mut finished: Finished<'_>,
) -> Count {
    finished.consumer = consumer_slot(ctx, meter, snap);
    meter.observe(series, head.status.as_u16(), &head.headers, finished)
}

/// The metrics slot of the request's consumer, when the meter counts per consumer.
pub(crate) fn consumer_slot(
    ctx: &RequestCtx<'_>,
    meter: &RouteMeter,
    snap: &Snapshot,
) -> Option<u32> {
    ctx.consumer
        .filter(|_| meter.per_consumer())
        .and_then(|c| snap.consumer_slots.get(&c.id).copied())
}

/// `body_filter` and `log` of a chain that filters no body, inline: the response as is when no plugin
/// logs; otherwise a plugin's or the gateway's answer is logged now and the upstream's body is wrapped so
/// that the log phase runs when hyper drops it.
pub fn respond(
    done: HeadDone<'_>,
    route: usize,
    captures: Option<&Captures>,
    scope: &Scope,
) -> Response<ProxyBody> {
    if !done.chain.has_log() {
        return match done.payload {
            Payload::Whole(bytes) => Response::from_parts(done.head, full(bytes)),
            Payload::Streamed { body, .. } => Response::from_parts(done.head, body.boxed()),
        };
    }
    // A clone: `done` borrows the captures (None for routes without regex captures, so usually free).
    logged::respond(done, route, captures.cloned(), scope.snap.clone(), scope.id)
}

/// `body_filter` and `log` in the task of a chain that filters bodies: sends the head (with the request's
/// metrics count, which the driver records) as soon as it is known, then feeds the body through the
/// filters and runs the log phase after the last byte.
pub async fn stream(
    done: HeadDone<'_>,
    count: Option<Count>,
    head_tx: oneshot::Sender<Answer>,
    snap: &Snapshot,
) {
    let HeadDone {
        mut ctx,
        chain,
        mut head,
        payload,
        source,
    } = done;
    match payload {
        Payload::Whole(bytes) => {
            let resp = finish_whole(ctx, chain, head, bytes, source);
            hand_over(head_tx, (resp, count), snap);
        }
        Payload::Streamed { body, upstream } => {
            let filtering = chain.has_body_filter() && ctx.request.method != http::Method::HEAD;
            if filtering {
                head.headers.remove(http::header::CONTENT_LENGTH);
            }
            let log = streaming::LogFacts::new(&head, source, ctx.started);
            let (tx, channel) = ChannelBody::channel();
            hand_over(
                head_tx,
                (Response::from_parts(head, channel.boxed()), count),
                snap,
            );
            let sent = streaming::pump(body, tx, chain, &mut ctx, filtering).await;
            let record = log.record(&ctx, sent, Some(upstream));
            chain.log(&ctx, &record);
        }
    }
}

/// `body_filter` and `log` of an answer made by the gateway or a plugin (never the upstream's), inline:
/// for requests answered before or without a route.
pub(crate) fn whole(done: HeadDone<'_>) -> Response<ProxyBody> {
    match done.payload {
        Payload::Whole(bytes) => finish_whole(done.ctx, done.chain, done.head, bytes, done.source),
        // Not made by `header_filter` from a plugin's answer or an error; kept total all the same.
        Payload::Streamed { body, .. } => Response::from_parts(done.head, body.boxed()),
    }
}

/// `body_filter` (one call, the last chunk) and `log` of a whole body.
fn finish_whole(
    mut ctx: RequestCtx<'_>,
    chain: &PluginChain,
    mut head: http::response::Parts,
    mut bytes: Bytes,
    source: Source,
) -> Response<ProxyBody> {
    if chain.has_body_filter() && ctx.request.method != http::Method::HEAD {
        head.headers.remove(http::header::CONTENT_LENGTH);
        chain.body_filter(&mut ctx, &mut bytes, true);
    }
    if chain.has_log() {
        let log = streaming::LogFacts::new(&head, source, ctx.started);
        chain.log(&ctx, &log.record(&ctx, bytes.len() as u64, None));
    }
    Response::from_parts(head, full(bytes))
}

/// Hands the head to the driver. When the driver is gone (the client went away first), its count is
/// recorded here instead, with the same function, so such a request is still counted once.
pub fn hand_over(head_tx: oneshot::Sender<Answer>, answer: Answer, snap: &Snapshot) {
    if let Err((_, count)) = head_tx.send(answer) {
        crate::metrics::record(snap, count);
    }
}
