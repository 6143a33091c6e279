//! The request driver: [`handle`] takes every request the worker's hyper service receives
//! ([`crate::worker`]) through Kong's phases, in order, on the snapshot that is live when it arrives. The
//! steps it calls live in [`crate::strict`] and [`crate::exchange`] (check and route; balance and send),
//! [`crate::phases`] (the plugin phases), [`crate::metrics`] (one count per request) and [`crate::error`]
//! (every failure's response). `docs/phases.md` charts it.

use crate::error::{error_response, Negotiation, ProxyError};
use crate::exchange::{self, ConnInfo, Exchange, Sending};
use crate::metrics::{self, content_length, Count, Finished, Series};
use crate::phases;
use crate::shared::Shared;
use crate::snapshot::Snapshot;
use crate::strict;
use crate::upgrade;
use crate::watchdog::{InFlight, Tracked};
use http::{Request, Response};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use sluice_metrics::Source;
use sluice_upstream::body::{box_err, ProxyBody};
use sluice_upstream::request_id;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::oneshot;

/// What a request holds for its whole life: the snapshot it is served on, the worker's shared state, the
/// connection's facts, its id, and when its head was received.
#[derive(Clone)]
pub struct Scope {
    pub snap: Arc<Snapshot>,
    pub shared: Arc<Shared>,
    pub conn: Arc<ConnInfo>,
    pub id: [u8; 32],
    pub started: Instant,
}

impl Scope {
    /// The per-request facts the steps read, borrowed.
    #[inline]
    pub fn exchange(&self) -> Exchange<'_> {
        Exchange {
            shared: &self.shared,
            conn: &self.conn,
            request_id: request_id::as_str(&self.id),
            started: self.started,
        }
    }
}

/// A response, with the request's count for its route's series (None when no prometheus applies).
pub type Answer = (Response<ProxyBody>, Option<Count>);

/// The request driver: one request, top to bottom.
///
/// 1. check the head and route (Kong's router and https-only check; errors answer at once);
/// 2. `rewrite` (global plugins) and `access`: a plugin may answer;
/// 3. balance and send (retries included);
/// 4. `header_filter` (Kong's response headers, then the plugins');
/// 5. metrics: observed once the head is final, recorded in one place at the end;
/// 6. `body_filter` per chunk, and 7. `log` after the last byte.
///
/// Kong runs the global plugins' `rewrite` before its router; Sluice runs it after routing, first thing in
/// step 2 (`PluginChain::access`), so the route's chain (global entries included) is known.
///
/// Steps 1 (and, on the fast path, the writing of the upstream request) run here, before the returned
/// future exists, so that future holds only what crosses the upstream wait. hyper and tokio move it into
/// place on every request (the bytes are memcpy per request), so its size is a cost of the hot path: keep
/// cold or large state out of it (the plugin steps are boxed, connecting is boxed in the pool).
pub fn handle(
    req: Request<Incoming>,
    conn: Arc<ConnInfo>,
    shared: Arc<Shared>,
    in_flight: InFlight,
) -> impl Future<Output = Response<Tracked>> + Send + 'static {
    let started = Instant::now();
    let scope = Scope {
        snap: shared.snapshot.load_full(),
        shared,
        conn,
        id: request_id::next(),
        started,
    };
    let step = 'step: {
        let x = scope.exchange();
        let snap = &*scope.snap;
        // 1. Check the head (nginx's rules, strict.rs) and route.
        let (mut parts, body) = req.into_parts();
        if let Err(malformed) = strict::check(&mut parts) {
            let resp = error_response(malformed.into(), &Negotiation::of(&parts), &x);
            break 'step Step::Done((resp, None));
        }
        let mut routed = match exchange::route(&mut parts, snap, &x) {
            Ok(r) => r,
            Err(e) => {
                // No route: the error, through `header_filter` and `log` of the global plugins.
                let series = Series::Unrouted;
                let bytes_in = series
                    .meter(snap)
                    .map_or(0, |_| content_length(&parts.headers));
                let resp = phases::unrouted(e, parts, snap, &x);
                let count = observe(series, snap, &resp, Source::Error, None, bytes_in, started);
                break 'step Step::Done((resp, count));
            }
        };
        if let Some(client) = upgrade::websocket(&mut parts) {
            // A WebSocket upgrade: steps 2 to 7 and the tunnel in a task of its own (upgrade.rs).
            let (run, fallback) = upgrade::start(client, parts, body, routed, &scope);
            break 'step Step::Plugins(run, Some(fallback));
        }
        let index = routed.found.id;
        let series = Series::Route(index);
        let chain = snap.plugins.route_chain(index);
        let negotiation = Negotiation::of(&parts);
        if chain.is_empty() {
            // The fast path, a route without plugins: steps 2, 6 and 7 and the plugins' part of step 4
            // have no handler to run, so they are skipped, which is what running them would do. Nothing
            // awaits before step 3, so its upstream request is written here and the future holds only it.
            let bytes_in = series
                .meter(snap)
                .map_or(0, |_| content_length(&parts.headers));
            let captures = routed.found.captures.take();
            let body = body.map_err(box_err).boxed();
            break 'step match Sending::prepare(
                &parts,
                body,
                routed,
                None,
                captures.as_ref(),
                snap,
                &x,
            ) {
                Ok(sending) => Step::Fast(Fast {
                    sending,
                    negotiation,
                    bytes_in,
                }),
                Err(e) => {
                    let resp = error_response(e, &negotiation, &x);
                    let count =
                        observe(series, snap, &resp, Source::Error, None, bytes_in, started);
                    Step::Done((resp, count))
                }
            };
        }
        // Steps 2 to 7 with plugins, in one boxed future (the plugin context borrows from the snapshot).
        // A chain that filters bodies runs them in a task of its own, which hands the head back at once.
        let in_task = chain.has_body_filter();
        let fallback = in_task.then(|| Negotiation::of(&parts));
        let scope = scope.clone();
        let plugin_steps = move |head_tx: Option<oneshot::Sender<Answer>>| async move {
            let (snap, x) = (&*scope.snap, scope.exchange());
            let chain = snap.plugins.route_chain(index);
            let captures = routed.found.captures.take();
            let mut ctx = phases::new_ctx(parts, snap, &x, Some(index), routed.client_ip);
            ctx.captures = captures.as_ref();
            let meter = series.meter(snap);
            // Read before `access`: the request head may go upstream (moved) afterwards.
            let bytes_in = meter.map_or(0, |_| content_length(&ctx.request.headers));
            // 2. rewrite and access, then 3. balance and send unless a plugin answered.
            let outcome = match phases::access(&mut ctx, chain, body).await {
                Ok(body) => phases::send(&ctx, chain, body, routed, snap, &x).await,
                Err(answered) => answered,
            };
            // 4. header_filter.
            let done = phases::header_filter(ctx, chain, outcome, &negotiation, &x);
            // 5. metrics, observed now (the head is final), recorded by the driver.
            let count = meter.map(|m| done.observe(m, series, snap, bytes_in, started));
            // 6. body_filter and 7. log.
            match head_tx {
                None => Some((
                    phases::respond(done, index, captures.as_ref(), &scope),
                    count,
                )),
                Some(head_tx) => {
                    phases::stream(done, count, head_tx, snap).await;
                    None
                }
            }
        };
        if !in_task {
            break 'step Step::Plugins(Box::pin(plugin_steps(None)), None);
        }
        let (head_tx, head_rx) = oneshot::channel();
        tokio::spawn(plugin_steps(Some(head_tx)));
        Step::Plugins(Box::pin(async move { head_rx.await.ok() }), fallback)
    };
    async move {
        let (resp, count) = match step {
            Step::Done(answer) => answer,
            // The fast path's 3. balance and send and 4. Kong's response headers (added while sending).
            Step::Fast(fast) => fast.send(&scope).await,
            // None: the chain's task ended before its head was ready.
            Step::Plugins(run, fallback) => run.await.unwrap_or_else(|| {
                let n = fallback.unwrap_or_default();
                (
                    error_response(ProxyError::Internal, &n, &scope.exchange()),
                    None,
                )
            }),
        };
        // 5. metrics: the one place a request is counted.
        metrics::record(&scope.snap, count);
        resp.map(|body| Tracked::new(body, in_flight))
    }
}

/// What is left to do once a request is routed.
enum Step {
    /// Answered without the upstream (a bad request, no route).
    Done(Answer),
    /// A route without plugins: straight to the upstream.
    Fast(Fast),
    /// Boxed: the plugin steps' state machine is large and most requests don't take it. The negotiation
    /// is for a chain's task that ends before its head is ready (None: an inline chain, which cannot).
    Plugins(
        Pin<Box<dyn Future<Output = Option<Answer>> + Send>>,
        Option<Negotiation>,
    ),
}

/// The fast path's steps 3 to 5, its upstream request already written: what the upstream wait needs,
/// and no more (the client's head was dropped).
struct Fast {
    sending: Sending,
    negotiation: Negotiation,
    bytes_in: u64,
}

impl Fast {
    /// Sends, then answers with the upstream's response (its body streamed, Kong's headers added while
    /// sending) or the gateway's error.
    async fn send(self, scope: &Scope) -> Answer {
        let (snap, x) = (&*scope.snap, scope.exchange());
        let route = self.sending.route();
        // `ready` is `started`: nothing awaited since the request arrived, which saves a clock read.
        let (resp, source, timings) = match self.sending.send(snap, &x, x.started).await {
            Ok(p) => (
                Response::from_parts(p.head, p.body.boxed()),
                Source::Service,
                Some(p.timings),
            ),
            Err(e) => (
                error_response(e, &self.negotiation, &x),
                Source::Error,
                None,
            ),
        };
        let count = observe(
            Series::Route(route),
            snap,
            &resp,
            source,
            timings.as_ref(),
            self.bytes_in,
            x.started,
        );
        (resp, count)
    }
}

/// The count of a request answered without plugins, when a prometheus instance applies to its series.
#[inline]
fn observe(
    series: Series,
    snap: &Snapshot,
    resp: &Response<ProxyBody>,
    source: Source,
    timings: Option<&crate::respond::Timings>,
    bytes_in: u64,
    started: Instant,
) -> Option<Count> {
    let meter = series.meter(snap)?;
    let finished = Finished {
        source,
        started,
        timings,
        bytes_in,
        consumer: None,
    };
    Some(meter.observe(series, resp.status().as_u16(), resp.headers(), finished))
}
