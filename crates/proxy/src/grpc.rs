//! gRPC proxying: a request routed to a route whose `protocols` are `grpc`/`grpcs`, or whose service's
//! `protocol` is, leaves the request driver ([`crate::handler::route`]) right after routing, as Kong hands
//! such a request from `proxy_pass` to `grpc_pass`: for a task of its own when its plugins filter bodies or
//! log (they run after the head), inline in the client stream's task otherwise ([`start`]).
//!
//! Then: Kong's checks of a gRPC route (a request that is not gRPC gets 415, one not over HTTP/2
//! gets 426, a plain-text one on a `grpcs`-only route gets `grpc-status: 1`), `access` of the route's
//! plugins (an answer becomes a gRPC status, [`status`]), then the call sent on an upstream HTTP/2
//! stream ([`send`]). The response head goes through `header_filter` to the client; its body and
//! trailers (`grpc-status`, `grpc-message`) are relayed frame by frame both ways, so client, server and
//! bidirectional streaming calls pass, with `body_filter` on the data; `log` runs when the call ends.
//! The client's `grpc-timeout` goes upstream as it came; the upstream enforces it.
//!
//! Errors on the way (no service, no target, connect failure, timeout) are the gateway's errors, which
//! [`crate::error`] words as gRPC statuses for gRPC requests.
//!
//! The `grpc-web` plugin turns an HTTP/1.1 (or h2) grpc-web request on such a route into a gRPC call in
//! `access`, through two hooks in [`sluice_plugins::RequestCtx::plugin_data`]: the path the upstream would
//! get over HTTP (`UpstreamPath`, for `pass_stripped_path`), lent before `access` on routes with plugins,
//! and `CarriedTrailers`, which a plugin puts there to get the upstream's trailers before its last
//! `body_filter` call instead of the client getting them as trailers ([`relay`]).

mod relay;
mod send;
pub mod status;

use crate::downstream::ClientBody;
use crate::error::Negotiation;
use crate::exchange::Routed;
use crate::handler::{Answer, Scope};
use crate::in_place;
use crate::path;
use crate::phases::{self, Outcome};
use crate::snapshot::Snapshot;
use crate::upgrade::{detach, Opened, Started};
use http::header::{HeaderValue, CONTENT_LENGTH, CONTENT_TYPE};
use http::{request, StatusCode, Version};
use sluice_model::{Route, Service};
use sluice_plugins::grpc_hooks::UpstreamPath;
use sluice_plugins::{PluginResponse, RequestCtx};
use tokio::sync::oneshot;

/// What makes a route gRPC's, compiled once per route.
#[derive(Debug, Clone, Copy, Default)]
pub struct Grpc {
    /// `protocols` has `grpc` or `grpcs`: Kong checks the request before anything else.
    checked: bool,
    /// `protocols` has `grpcs` and not `grpc`: a plain-text call is refused.
    tls_only: bool,
}

/// The route's gRPC facts; None when neither the route nor its service speaks gRPC (every HTTP route).
pub fn of(route: &Route, service: Option<&Service>) -> Option<Grpc> {
    let has = |p: &str| route.protocols.iter().any(|r| r == p);
    let checked = has("grpc") || has("grpcs");
    let service = service.is_some_and(|s| matches!(s.protocol.as_str(), "grpc" | "grpcs"));
    (checked || service).then_some(Grpc {
        checked,
        tls_only: has("grpcs") && !has("grpc"),
    })
}

/// Starts the call; the driver awaits the head it hands over. A route whose chain filters bodies or logs
/// has work after the head, so its call runs in a task of its own; any other call runs inline, in the
/// client stream's task, and ends with its head ([`relay`]): a task spawned per call would cost each
/// call two more hops between tasks (the head's, then the body's through a channel), which is where a
/// call's latency went. Cold and out of line, like the upgrade branch: the HTTP driver pays only for the
/// test that leads here.
#[cold]
#[inline(never)]
pub fn start(
    grpc: Grpc,
    parts: request::Parts,
    body: ClientBody,
    routed: Routed,
    scope: &Scope,
) -> Started {
    let (fallback, scope) = (Negotiation::of(&parts), scope.clone());
    let chain = scope.snap.plugins.route_chain(routed.found.id);
    if chain.has_body_filter() || chain.has_log() {
        return detach(fallback, |head| run(grpc, parts, body, routed, scope, head));
    }
    // Made in its box: `Box::pin` would build the call's future (kilobytes) on the stack and copy it.
    let inline = in_place::boxed(|| async move {
        let (head_tx, head_rx) = oneshot::channel();
        // Ends once the head is handed over: with no body filter, every answer but the upstream's is
        // whole, and the upstream's body goes out as it is.
        run(grpc, parts, body, routed, scope, head_tx).await;
        head_rx.await.ok()
    });
    (inline, fallback)
}

/// Steps 4 to 9 of a gRPC call, in its task or inline.
async fn run(
    grpc: Grpc,
    parts: request::Parts,
    body: ClientBody,
    mut routed: Routed,
    scope: Scope,
    head_tx: oneshot::Sender<Answer>,
) {
    let (snap, x) = (&*scope.snap, scope.exchange());
    let refused = grpc
        .checked
        .then(|| refuse(&parts, grpc, &routed))
        .flatten();
    let is_grpc =
        status::is_grpc(parts.headers.get(CONTENT_TYPE)) && parts.version == Version::HTTP_2;
    let captures = routed.found.captures.take();
    let mut opened = Opened::new(parts, &routed, snap, &x, captures.as_ref());
    let (chain, ctx) = (opened.chain, &mut opened.ctx);
    if !chain.is_empty() {
        lend_upstream_path(ctx, &routed, snap);
    }
    let outcome = match refused {
        Some(answer) => Outcome::Plugin(answer),
        None => match phases::access(ctx, chain, body, None).await {
            Err(Outcome::Plugin(answer)) if is_grpc => {
                Outcome::Plugin(status::plugin_answer(answer))
            }
            Err(answered) => answered,
            Ok(body) => match send::send(ctx, body, routed, snap, &x).await {
                Ok(sent) => {
                    let call = relay::Call {
                        ctx: opened.ctx,
                        chain,
                        series: opened.series,
                        bytes_in: opened.bytes_in,
                    };
                    return call.relay(sent, head_tx, &scope).await;
                }
                Err(e) => Outcome::Failed(e),
            },
        },
    };
    opened.answer(outcome, &x, snap, head_tx).await;
}

/// The hook for `grpc-web`'s `pass_stripped_path`: the path the upstream would get over HTTP (`strip_path`,
/// the service's `path`), which a gRPC call does not get otherwise (`grpc_pass` sends the client's path).
/// Lent only to routes with plugins; one string per call.
fn lend_upstream_path(ctx: &mut RequestCtx<'_>, routed: &Routed, snap: &Snapshot) {
    let Some(info) = snap.routes.get(routed.found.id) else {
        return;
    };
    let service_path = info
        .service
        .and_then(|s| snap.services.get(s))
        .and_then(|s| s.path.as_deref());
    let path = routed
        .normalized
        .as_deref()
        .unwrap_or(ctx.request.uri.path());
    let joined = path::upstream_path(service_path, path, routed.strip, info.path_handling_v1);
    let escaped = path::escape(&joined).into_owned();
    ctx.plugin_data.insert(UpstreamPath(escaped));
}

/// Kong's checks of a request on a gRPC route, before the plugins: its answer when it is refused.
#[cold]
fn refuse(parts: &request::Parts, grpc: Grpc, routed: &Routed) -> Option<PluginResponse> {
    if !status::is_grpc(parts.headers.get(CONTENT_TYPE)) {
        let msg = "Non-gRPC request matched gRPC route";
        return Some(PluginResponse::message(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            msg,
        ));
    }
    if parts.version != Version::HTTP_2 {
        let msg = "Please use HTTP2 protocol";
        let mut answer = PluginResponse::message(StatusCode::UPGRADE_REQUIRED, msg);
        let h = &mut answer.headers;
        h.insert(
            http::header::CONNECTION,
            HeaderValue::from_static("Upgrade"),
        );
        h.insert(http::header::UPGRADE, HeaderValue::from_static("HTTP/2"));
        return Some(answer);
    }
    if grpc.tls_only && !routed.forwarded.is_https() {
        let mut answer = PluginResponse {
            status: StatusCode::OK,
            headers: Default::default(),
            body: Default::default(),
        };
        let h = &mut answer.headers;
        h.insert(CONTENT_TYPE, HeaderValue::from_static("application/grpc"));
        h.insert(status::GRPC_STATUS, HeaderValue::from(1));
        h.insert(
            status::GRPC_MESSAGE,
            HeaderValue::from_static("gRPC request matched gRPCs route"),
        );
        h.insert(CONTENT_LENGTH, HeaderValue::from(0));
        return Some(answer);
    }
    None
}
