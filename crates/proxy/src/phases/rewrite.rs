//! Kong's `rewrite` phase: the global plugins' rewrite handlers run before the router, on the request as
//! the client sent it. The router then sees the request as they left it (a changed path or `Host` picks
//! another route), or a handler answers and the request never reaches the router. The driver comes here
//! only when some global instance registered `rewrite` ([`sluice_plugins::CompiledPlugins::rewrite_chain`]).

use super::ctx::{new_ctx, FromRewrite};
use super::{header_filter, whole, Outcome};
use crate::downstream::ClientBody;
use crate::error::Negotiation;
use crate::handler::{self, Answer, Scope};
use sluice_plugins::RequestCtx;

/// Step 2 of the driver, then the rest of the request from step 3 (routing) on.
pub async fn rewrite(
    parts: http::request::Parts,
    body: ClientBody,
    scope: Scope,
) -> Option<Answer> {
    let (snap, x) = (&*scope.snap, scope.exchange());
    let chain = snap.plugins.global_chain();
    let client_ip = x.shared.trust.client_ip(&parts.headers, x.conn.peer.ip());
    let mut ctx = new_ctx(parts, snap, &x, None, client_ip);
    if let Some(answer) = chain.rewrite(&mut ctx).await {
        // Answered before routing: filtered and logged as a request without a route, so not counted in
        // the metrics.
        let negotiation = Negotiation::of(&ctx.request);
        let done = header_filter(ctx, chain, Outcome::Plugin(answer), &negotiation, &x);
        return Some((whole(done), None));
    }
    let RequestCtx {
        request: mut parts,
        response_headers,
        ..
    } = ctx;
    if !response_headers.is_empty() {
        // Headers a rewrite handler added to the response: the route's context takes them over.
        parts.extensions.insert(FromRewrite(response_headers));
    }
    let step = handler::route(parts, body, &scope);
    Some(step.run(&scope).await)
}
