//! Routes whose plugins act in `access` only (authentication, limits, termination, request edits; no
//! `header_filter`, `body_filter` or `log`, no request body read): `access` runs before the driver's
//! future exists, and the request then goes on as a route without plugins does ([`Fast`]), carrying only
//! what the plugins leave for the response ([`Added`]). The plugin context is dropped before the upstream
//! wait, and nothing is boxed.
//!
//! A handler whose work must wait (a limit counted in Redis, an LDAP bind) detaches the context from the
//! snapshot and finishes `access` in a boxed future ([`resumed`]) that ends in the fast path's step all
//! the same; the driver runs that send in its own future, so the box holds the wait only. A body limit a
//! plugin set sends the request the general way (`send` and `header_filter`, as [`super::steps`] does),
//! since only that path caps the body.
//!
//! A chain that filters bodies (proxy-cache) runs `access` here too, unless a plugin reads this
//! request's body first: a plugin's answer (a cache hit) is then made at once, through `header_filter`,
//! `body_filter` and `log` as the chain's task would, with no task, channel or boxed steps; a request that
//! goes on takes its context into the chain's task ([`super::steps::in_task`]).

use super::logged::Detached;
use super::{access, consumer_slot, header_filter, new_ctx, send, whole, Outcome, RouteSteps};
use super::{in_task, Begin};
use crate::downstream::ClientBody;
use crate::error::Negotiation;
use crate::error::ProxyError;
use crate::exchange::{Exchange, Routed, Sending};
use crate::handler::{Fast, Scope, Step};
use crate::in_place;
use crate::metrics::request_length;
use crate::snapshot::Snapshot;
use http_body_util::BodyExt;
use sluice_plugins::{AccessNow, AddedHeaders, RequestCtx};
use sluice_upstream::body::{box_err, ProxyBody};

/// What a route's access-only plugins leave for the rest of the request.
pub(crate) struct Added {
    /// Headers for whatever response the client gets (e.g. rate-limiting's `RateLimit-*`).
    headers: AddedHeaders,
    /// The consumer's metrics slot, when the route's prometheus counts per consumer.
    pub consumer: Option<u32>,
}

impl Added {
    /// What the plugins left, boxed beside the fast path's send; None when they left nothing.
    fn boxed(headers: AddedHeaders, consumer: Option<u32>) -> Option<Box<Added>> {
        (!headers.is_empty() || consumer.is_some()).then(|| Box::new(Added { headers, consumer }))
    }

    /// `header_filter` of an access-only chain: the plugins' headers on the response head.
    pub(crate) fn apply(self, headers: &mut http::HeaderMap) {
        self.headers.apply(headers);
    }

    /// The plugins' headers, for a head that gets them when it is written.
    pub(crate) fn into_headers(self) -> AddedHeaders {
        self.headers
    }
}

/// Steps 4 to 7 of a route whose plugins act in `access` only: `access` now, then the fast path's send
/// (or the answer a plugin or the gateway made, through `header_filter`). For a chain that filters
/// bodies, `access` now, then an answer made here (through `header_filter`, `body_filter` and `log`, as
/// in the chain's task) or the rest of the steps in the chain's task ([`in_task`]).
pub(crate) fn start(
    parts: http::request::Parts,
    body: ClientBody,
    mut routed: Routed,
    negotiation: Negotiation,
    scope: &Scope,
) -> Step {
    let (snap, x) = (&*scope.snap, scope.exchange());
    let mut route = RouteSteps::of(&mut routed, snap);
    let mut ctx = new_ctx(parts, snap, &x, Some(route.index), routed.client_ip);
    ctx.captures = route.captures.as_ref();
    let bytes_in = route.meter.map_or(0, |_| request_length(&ctx.request));
    let outcome = match route.chain.access_now(&mut ctx, 0) {
        AccessNow::Respond(resp) => Outcome::Plugin(resp),
        AccessNow::Continue if route.chain.access_only() && ctx.body_limit.is_none() => {
            let body = body.map_err(box_err).boxed();
            match fast(&mut ctx, &route, body, routed, snap, &x) {
                Ok((sending, added)) => {
                    return Step::Fast(Fast::new(sending, negotiation, bytes_in, added))
                }
                Err(e) => Outcome::Failed(e),
            }
        }
        now => {
            // Both made in their boxes (`Box::new`/`Box::pin` would build them on the stack and copy
            // them, the future's whole size), as `log_only` does.
            let ctx = Box::write(Box::new_uninit(), Detached::new(ctx, route.index));
            routed.found.captures = route.captures.take();
            if !route.chain.access_only() {
                // A chain that filters bodies: on in its task, from where `access` stopped.
                let begin = Begin::Resumed(ctx, now, bytes_in);
                return in_task(begin, body, routed, negotiation, scope);
            }
            let scope = scope.clone();
            let rest =
                in_place::boxed(|| resumed(ctx, now, body, routed, negotiation, bytes_in, scope));
            return Step::Resumed(rest);
        }
    };
    answered(ctx, &route, outcome, &negotiation, bytes_in, scope)
}

/// The rest of `access` after a handler had to wait, and then the step [`start`] would have made had
/// it not waited: the fast path's send with what the plugins left (the context is dropped here), which
/// the driver runs in its own future, not in this box; or the answer. A plugin's answer goes through
/// `header_filter` as in [`super::steps`] (an access-only chain has no handler there, only the headers
/// its plugins added). A body limit a plugin set sends the request the general way (`send` and
/// `header_filter`), boxed apart: rare, and its state would make this box as large as the fast send's.
async fn resumed(
    ctx: Box<Detached>,
    now: AccessNow,
    body: ClientBody,
    mut routed: Routed,
    negotiation: Negotiation,
    bytes_in: u64,
    scope: Scope,
) -> Step {
    let (snap, x) = (&*scope.snap, scope.exchange());
    let route = RouteSteps::of(&mut routed, snap);
    let mut ctx = ctx.attach(snap, x.request_id, route.captures.as_ref());
    let outcome = match access(&mut ctx, route.chain, body, Some(now)).await {
        Ok(body) if ctx.body_limit.is_none() => {
            match fast(&mut ctx, &route, body, routed, snap, &x) {
                Ok((sending, added)) => {
                    return Step::Fast(Fast::new(sending, negotiation, bytes_in, added))
                }
                Err(e) => Outcome::Failed(e),
            }
        }
        Ok(body) => Box::pin(send(&ctx, route.chain, body, routed, snap, &x)).await,
        Err(answered) => answered,
    };
    answered(ctx, &route, outcome, &negotiation, bytes_in, &scope)
}

/// The upstream request written from the plugins' edited head, and what they leave for the response.
/// The head's map then serves the next head parsed on this worker, as on the fast path (the context
/// goes no further). Always inlined, as [`Sending::prepare`] is: out of line, the upstream request would
/// be copied out of each call (no `uri` is made: an access-only chain has no log phase).
#[inline(always)]
fn fast(
    ctx: &mut RequestCtx<'_>,
    route: &RouteSteps<'_>,
    body: ProxyBody,
    routed: Routed,
    snap: &Snapshot,
    x: &Exchange<'_>,
) -> Result<(Sending, Option<Box<Added>>), ProxyError> {
    let consumer = ctx.consumer.map(|c| &c.id);
    let sending = Sending::prepare(&ctx.request, body, routed, consumer, ctx.captures, snap, x)?;
    sluice_h1::recycle_headers(std::mem::take(&mut ctx.request.headers));
    let consumer = route.meter.and_then(|m| consumer_slot(ctx, m, snap));
    let added = Added::boxed(std::mem::take(&mut ctx.response_headers), consumer);
    Ok((sending, added))
}

/// Answered without the fast send (a plugin's answer, the gateway's error, or the upstream's after a body
/// limit): the plugins' headers through `header_filter`, and the count; the request's last step.
fn answered(
    ctx: RequestCtx<'_>,
    route: &RouteSteps<'_>,
    outcome: Outcome,
    negotiation: &Negotiation,
    bytes_in: u64,
    scope: &Scope,
) -> Step {
    let (snap, x) = (&*scope.snap, scope.exchange());
    let done = header_filter(ctx, route.chain, outcome, negotiation, &x);
    let count = (route.meter).map(|m| done.observe(m, route.series, snap, bytes_in, scope.started));
    Step::Done((whole(done), count))
}
