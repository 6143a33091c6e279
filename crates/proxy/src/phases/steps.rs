//! Steps 4 to 9 of a routed request whose route has plugins beyond `access` (access-only chains take
//! [`super::access_first`]), as one future: `access`, balance and send, `header_filter`, the metrics
//! count, then `body_filter` and `log` (inline, or in the chain's own task when it filters bodies).
//!
//! The future owns what it needs (the request head, the snapshot through the [`Scope`]) and builds the
//! plugin context inside, since the context borrows from the snapshot. The driver boxes it: most requests
//! never take it. A chain that filters bodies has begun `access` before the future exists
//! ([`super::access_first`]), so the future takes over its context and goes on from where it stopped.

use super::logged::Detached;
use super::{access, header_filter, new_ctx, respond, send, stream, RouteSteps};
use crate::downstream::ClientBody;
use crate::error::Negotiation;
use crate::exchange::Routed;
use crate::handler::{Answer, Scope, Step};
use crate::metrics::request_length;
use sluice_plugins::AccessNow;
use std::net::IpAddr;
use tokio::sync::oneshot;

/// Where the steps begin.
pub(crate) enum Begin {
    /// The request just routed (its head, and the client's address as the trust rules read it): the
    /// context is built in the future and `access` runs from the start.
    Fresh(http::request::Parts, IpAddr),
    /// `access` already ran as far as it could before the future existed ([`super::access_first`]): its
    /// context, where it stopped (never an answer: that was answered then), and the request's length as
    /// the client sent it, for the metrics.
    Resumed(Box<Detached>, AccessNow, u64),
}

/// Steps 4 to 9 from `begin`. `head_tx` is Some for a chain that filters bodies, which runs in a task of
/// its own ([`in_task`]): the head then goes through it as soon as it is known, and the future ends with
/// None after the log phase. Without it, the future ends with the answer.
pub(crate) async fn steps(
    begin: Begin,
    body: ClientBody,
    mut routed: Routed,
    negotiation: Negotiation,
    head_tx: Option<oneshot::Sender<Answer>>,
    scope: Scope,
) -> Option<Answer> {
    let (snap, x) = (&*scope.snap, scope.exchange());
    let route = RouteSteps::of(&mut routed, snap);
    let (index, chain, meter) = (route.index, route.chain, route.meter);
    let (mut ctx, resume, bytes_in) = match begin {
        Begin::Fresh(parts, client_ip) => {
            let mut ctx = new_ctx(parts, snap, &x, Some(index), client_ip);
            ctx.captures = route.captures.as_ref();
            // Read before `access`: the request head may go upstream (moved) afterwards.
            let bytes_in = meter.map_or(0, |_| request_length(&ctx.request));
            (ctx, None, bytes_in)
        }
        Begin::Resumed(ctx, now, bytes_in) => {
            let ctx = ctx.attach(snap, x.request_id, route.captures.as_ref());
            (ctx, Some(now), bytes_in)
        }
    };
    // 4. access, then 5. balance and send unless a plugin answered.
    let outcome = match access(&mut ctx, chain, body, resume).await {
        Ok(body) => send(&ctx, chain, body, routed, snap, &x).await,
        Err(answered) => answered,
    };
    // 6. header_filter.
    let done = header_filter(ctx, chain, outcome, &negotiation, &x);
    // 7. metrics, observed now (the head is final), recorded by the driver.
    let count = meter.map(|m| done.observe(m, route.series, snap, bytes_in, scope.started));
    // 8. body_filter and 9. log.
    match head_tx {
        None => Some((respond(done, index, route.captures.as_ref(), &scope), count)),
        Some(head_tx) => {
            stream(done, count, head_tx, snap).await;
            None
        }
    }
}

/// The steps of a chain that filters bodies, spawned in a task of their own, which hands the head back
/// through a channel as soon as it is known (the negotiation is kept for an error response if the task
/// ends first).
pub(crate) fn in_task(
    begin: Begin,
    body: ClientBody,
    routed: Routed,
    negotiation: Negotiation,
    scope: &Scope,
) -> Step {
    let fallback = negotiation.clone();
    let (head_tx, head_rx) = oneshot::channel();
    let steps = steps(
        begin,
        body,
        routed,
        negotiation,
        Some(head_tx),
        scope.clone(),
    );
    // Boxed: spawning moves the future into the task, and tokio would otherwise copy its ~6.5 KB of
    // state several times on the way there.
    tokio::spawn(Box::pin(steps));
    Step::Plugins(Box::pin(async move { head_rx.await.ok() }), Some(fallback))
}
