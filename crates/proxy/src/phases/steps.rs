//! Steps 4 to 9 of a routed request whose route has plugins beyond `access` (access-only chains take
//! [`super::access_first`]), as one future: `access`, balance and send, `header_filter`, the metrics
//! count, then `body_filter` and `log` (inline, or in the chain's own task when it filters bodies).
//!
//! The future owns what it needs (the request head, the snapshot through the [`Scope`]) and builds the
//! plugin context inside, since the context borrows from the snapshot. The driver boxes it: most requests
//! never take it.

use super::{access, header_filter, new_ctx, respond, send, stream, RouteSteps};
use crate::downstream::ClientBody;
use crate::error::Negotiation;
use crate::exchange::Routed;
use crate::handler::{Answer, Scope};
use crate::metrics::request_length;
use std::net::IpAddr;
use tokio::sync::oneshot;

/// Steps 4 to 9 of a request just routed (its head, and the client's address as the trust rules read
/// it). `head_tx` is Some for a chain that filters bodies, which runs in a task of
/// its own: the head then goes through it as soon as it is known, and the future ends with None after the
/// log phase. Without it, the future ends with the answer.
pub(crate) async fn steps(
    parts: http::request::Parts,
    client_ip: IpAddr,
    body: ClientBody,
    mut routed: Routed,
    negotiation: Negotiation,
    head_tx: Option<oneshot::Sender<Answer>>,
    scope: Scope,
) -> Option<Answer> {
    let (snap, x) = (&*scope.snap, scope.exchange());
    let route = RouteSteps::of(&mut routed, snap);
    let (index, chain, meter) = (route.index, route.chain, route.meter);
    let mut ctx = new_ctx(parts, snap, &x, Some(index), client_ip);
    // Read before `access`: the request head may go upstream (moved) afterwards.
    let bytes_in = meter.map_or(0, |_| request_length(&ctx.request));
    ctx.captures = route.captures.as_ref();
    // 4. access, then 5. balance and send unless a plugin answered.
    let outcome = match access(&mut ctx, chain, body, None).await {
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
