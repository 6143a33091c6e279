//! The request driver: [`handle`] takes every request a client connection receives (HTTP/1.1 from
//! [`crate::downstream`], h2 from hyper's server in [`crate::worker`]) through Kong's phases, in order, on the snapshot that is live when it arrives. The
//! steps it calls live in [`crate::strict`] and [`crate::exchange`] (check and route; balance and send),
//! [`crate::phases`] (the plugin phases), [`crate::metrics`] (one count per request) and [`crate::error`]
//! (every failure's response). `docs/phases.md` charts it.

use crate::downstream::ClientBody;
use crate::error::{error_response, Negotiation, ProxyError};
use crate::exchange::{self, ConnInfo, Exchange, Late, Sending};
use crate::grpc;
use crate::metrics::{self, request_length, Count, Finished, Series};
use crate::phases;
use crate::respond::LateHeaders;
use crate::shared::Shared;
use crate::snapshot::Snapshot;
use crate::strict;
use crate::upgrade;
use crate::watchdog::{InFlight, Tracked};
use http::{Request, Response};
use http_body_util::BodyExt;
use sluice_h1::ResponseFields;
use sluice_metrics::Source;
use sluice_plugins::AddedHeaders;
use sluice_upstream::body::{box_err, ProxyBody};
use sluice_upstream::request_id;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Instant;

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

/// What the driver gives the server that received the request: the response, and Kong's headers when
/// they are still to be added to its head (the fast path: see [`crate::respond`]). The HTTP/1.1 writer
/// appends them as text; hyper's h2 server needs them in the map ([`Reply::into_response`]).
pub struct Reply {
    pub response: Response<Tracked>,
    pub late: Option<LateHeaders>,
}

impl Reply {
    /// The response with Kong's headers in its map.
    pub fn into_response(self) -> Response<Tracked> {
        let mut response = self.response;
        if let Some(late) = self.late {
            late.insert(response.headers_mut());
        }
        response
    }
}

/// The rest of a request from its [`Step`] to its answer. A macro, not an `async fn`, so that the
/// driver's future holds the step once: awaiting a function's future would keep a second copy of it,
/// and every byte of that future is moved per request.
/// With `$late`, the fast path leaves Kong's headers to the server (the answer's second part).
macro_rules! finish {
    ($step:expr, $scope:expr, $late:expr) => {{
        // An access-only chain whose handler had to wait ends in the step it would have made: its send
        // runs here, in this future, so that the box holds only the wait. Replaced in place (`$step` is a
        // place): binding it anew would copy every request's step.
        if let Step::Resumed(run) = &mut $step {
            let next = run.as_mut().await;
            $step = next;
        }
        match $step {
            Step::Done(answer) => (answer, None),
            // The fast path's 5. balance and send and 6. Kong's response headers (added while sending).
            Step::Fast(fast) => fast.send($scope, $late).await,
            // A chain that only logs: Kong's headers left to the server as on the fast path, or put
            // into the map when the server cannot take them.
            Step::Logged(run) => {
                let ((mut resp, count), late) = run.await;
                match late {
                    Some(late) if !$late => {
                        late.insert(resp.headers_mut());
                        ((resp, count), None)
                    }
                    late => ((resp, count), late),
                }
            }
            // None: the chain's task ended before its head was ready.
            Step::Plugins(run, fallback) => {
                let answer = run.await.unwrap_or_else(|| {
                    let n = fallback.unwrap_or_default();
                    (
                        error_response(ProxyError::Internal, &n, &$scope.exchange()),
                        None,
                    )
                });
                (answer, None)
            }
            Step::Resumed(_) => unreachable!("a resumed access ends in another kind of step"),
        }
    }};
}

/// The request driver: one request, top to bottom, in Kong's order.
///
/// 1. check the head (nginx's rules; a malformed head is answered at once);
/// 2. `rewrite` of the global plugins, only when one has it: before the router, which then sees the
///    request as they left it (a plugin may answer);
/// 3. route (Kong's router and https-only check);
/// 4. `access`: a plugin may answer;
/// 5. balance and send (retries included);
/// 6. `header_filter` (Kong's response headers, then the plugins');
/// 7. metrics: observed once the head is final, recorded in one place at the end;
/// 8. `body_filter` per chunk, and 9. `log` after the last byte.
///
/// Steps 1 and 3 (and, on the fast path, the writing of the upstream request) run here, before the
/// returned future exists, so that future holds only what crosses the upstream wait. hyper and tokio move
/// it into place on every request (the bytes are memcpy per request), so its size is a cost of the hot
/// path: keep cold or large state out of it (the plugin steps are boxed, connecting is boxed in the pool).
pub fn handle(
    req: Request<ClientBody>,
    conn: Arc<ConnInfo>,
    shared: Arc<Shared>,
    in_flight: InFlight,
) -> impl Future<Output = Reply> + Send + 'static {
    let started = Instant::now();
    let scope = Scope {
        snap: shared.snapshot.load_full(),
        shared,
        conn,
        id: request_id::next(),
        started,
    };
    // 1. Check the head (nginx's rules, strict.rs).
    let (mut parts, body) = req.into_parts();
    let mut step = match strict::check(&mut parts) {
        Err(malformed) => {
            let x = scope.exchange();
            let resp = error_response(malformed.into(), &Negotiation::of(&parts), &x);
            Step::Done((resp, None))
        }
        // 2. rewrite, then 3. and the rest from there (boxed: few configs have a global rewrite).
        Ok(()) if scope.snap.plugins.rewrite_chain().is_some() => {
            Step::Plugins(Box::pin(phases::rewrite(parts, body, scope.clone())), None)
        }
        Ok(()) => route(parts, body, &scope),
    };
    async move {
        let ((resp, count), late) = finish!(step, &scope, true);
        // 7. metrics: the one place a request is counted.
        metrics::record(&scope.snap, count);
        Reply {
            response: resp.map(|body| Tracked::new(body, in_flight)),
            late,
        }
    }
}

/// Step 3, routing, and the steps the route needs from there: the fast path's upstream request is
/// written now; a route with plugins gets its steps 4 to 9 as one boxed future.
#[inline(always)]
pub(crate) fn route(mut parts: http::request::Parts, body: ClientBody, scope: &Scope) -> Step {
    let x = scope.exchange();
    let snap = &*scope.snap;
    let started = scope.started;
    let mut routed = match exchange::route(&mut parts, snap, &x) {
        Ok(r) => r,
        Err(e) => {
            // No route: the error, through `header_filter`, `body_filter` and `log` of the global plugins;
            // not counted in the metrics (no route, no series).
            let resp = phases::unrouted(e, parts, snap, &x);
            return Step::Done((resp, None));
        }
    };
    if let Some(grpc) = routed.grpc {
        // gRPC: steps 4 to 9 in a task of its own, over HTTP/2 upstream (grpc.rs).
        let (run, fallback) = grpc::start(grpc, parts, body, routed, scope);
        return Step::Plugins(run, Some(fallback));
    }
    if let Some(client) = upgrade::websocket(&mut parts) {
        // A WebSocket upgrade: steps 4 to 9 and the tunnel in a task of its own (upgrade.rs).
        let (run, fallback) = upgrade::start(client, parts, body, routed, scope);
        return Step::Plugins(run, Some(fallback));
    }
    let index = routed.found.id;
    let series = Series(index);
    let chain = snap.plugins.route_chain(index);
    let negotiation = Negotiation::of(&parts);
    if chain.is_empty() {
        // The fast path, a route without plugins: steps 4, 8 and 9 and the plugins' part of step 6
        // have no handler to run, so they are skipped, which is what running them would do. Nothing
        // awaits before step 5, so its upstream request is written here and the future holds only it.
        let bytes_in = series.meter(snap).map_or(0, |_| request_length(&parts));
        let captures = routed.found.captures.take();
        let body = body.map_err(box_err).boxed();
        let prepared = Sending::prepare(&parts, body, routed, None, captures.as_ref(), snap, &x);
        // The upstream request is written: the client's map serves the next head parsed on this
        // worker (else each request freed one map and the upstream's response head made another).
        sluice_h1::recycle_headers(parts.headers);
        return match prepared {
            Ok(sending) => Step::Fast(Fast::new(sending, negotiation, bytes_in, None)),
            Err(e) => {
                let resp = error_response(e, &negotiation, &x);
                let count = observe(series, snap, &resp, Source::Error, None, bytes_in, started);
                Step::Done((resp, count))
            }
        };
    }
    if chain.only_logs() {
        // Plugins that only log: the fast path's upstream request, the head kept for the log phase.
        return phases::log_only(parts, body, routed, negotiation, scope);
    }
    // A chain that filters bodies runs them in a task of its own, which hands the head back at once.
    let in_task = chain.has_body_filter();
    if chain.access_only() || (in_task && chain.has_access() && !chain.wants_request_body(&parts)) {
        // Plugins that act in `access` only: it runs now, then the fast path with the headers they add.
        // A chain that filters bodies runs it now too: a plugin's answer (a cache hit) is then made
        // here, with no task; only a request that goes on gets one.
        return phases::access_first(parts, body, routed, negotiation, scope);
    }
    // Steps 4 to 9 with plugins, in one boxed future (the plugin context borrows from the snapshot).
    let begin = phases::Begin::Fresh(parts, routed.client_ip);
    if in_task {
        return phases::in_task(begin, body, routed, negotiation, scope);
    }
    let steps = phases::steps(begin, body, routed, negotiation, None, scope.clone());
    Step::Plugins(Box::pin(steps), None)
}

/// What is left to do once a request is checked (and routed, but for a global rewrite).
pub(crate) enum Step {
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
    /// A route whose plugins only log (`phases/log_only.rs`): boxed like `Plugins`, and like `Fast` it may
    /// leave Kong's headers and the plugins' to the server (the answer's second part).
    Logged(Pin<Box<dyn Future<Output = (Answer, Option<LateHeaders>)> + Send>>),
    /// An access-only chain whose handler had to wait (`phases/access_first.rs`, e.g. rate-limiting's
    /// Redis call): the boxed wait ends in the step the request would have taken without it (`Fast` or
    /// `Done`; never `Resumed` again), which the driver then finishes.
    Resumed(Pin<Box<dyn Future<Output = Step> + Send>>),
}

impl Step {
    /// The rest of the request, to its answer (for the boxed rewrite path; the driver inlines it).
    pub(crate) async fn run(mut self, scope: &Scope) -> Answer {
        finish!(self, scope, false).0
    }
}

/// The fast path's steps 5 to 7, its upstream request already written: what the upstream wait needs,
/// and no more (the client's head was dropped).
pub(crate) struct Fast {
    sending: Sending,
    negotiation: Negotiation,
    bytes_in: u64,
    /// What plugins that act in `access` only left for the response (boxed: most routes have none).
    added: Option<Box<phases::Added>>,
}

impl Fast {
    pub(crate) fn new(
        sending: Sending,
        negotiation: Negotiation,
        bytes_in: u64,
        added: Option<Box<phases::Added>>,
    ) -> Fast {
        Fast {
            sending,
            negotiation,
            bytes_in,
            added,
        }
    }

    /// Sends, then answers with the upstream's response (its body streamed, Kong's headers added while
    /// sending) or the gateway's error. With `late`, Kong's headers and the plugins' are left to the
    /// server, which adds them when it writes the head (the second part).
    pub(crate) async fn send(self, scope: &Scope, late: bool) -> (Answer, Option<LateHeaders>) {
        let (snap, x) = (&*scope.snap, scope.exchange());
        let route = self.sending.route();
        // `ready` is `started`: nothing awaited since the request arrived, which saves a clock read.
        // Over HTTP/1.1 the upstream's fields are left as received too (no map is made of them).
        let leave = if late { Late::All } else { Late::No };
        let sent = self.sending.send(snap, &x, x.started, leave).await;
        let (mut resp, source, timings, late, upstream) = match sent {
            Ok(p) => (
                Response::from_parts(p.head, p.body.boxed()),
                Source::Service,
                Some(p.timings),
                p.late,
                p.upstream,
            ),
            Err(e) => (
                error_response(e, &self.negotiation, &x),
                Source::Error,
                None,
                None,
                None,
            ),
        };
        // The plugins' headers go after Kong's, as Kong's `header_filter` runs the plugins after its own:
        // in the map now, or beside Kong's when those are left to the server.
        let mut consumer = None;
        let mut added_late = AddedHeaders::new();
        if let Some(added) = self.added {
            consumer = added.consumer;
            match late.is_some() {
                true => added_late = added.into_headers(),
                false => added.apply(resp.headers_mut()),
            }
        }
        let finished = Finished {
            source,
            started: x.started,
            timings: timings.as_ref(),
            bytes_in: self.bytes_in,
            consumer,
        };
        let count = observe_finished(Series(route), snap, &resp, upstream.as_ref(), finished);
        let late = late.map(|kong| LateHeaders {
            kong,
            added: added_late,
            upstream,
        });
        ((resp, count), late)
    }
}

/// The count of a request answered without plugins, when a prometheus instance applies to its series.
#[inline]
pub(crate) fn observe(
    series: Series,
    snap: &Snapshot,
    resp: &Response<ProxyBody>,
    source: Source,
    timings: Option<&crate::respond::Timings>,
    bytes_in: u64,
    started: Instant,
) -> Option<Count> {
    let finished = Finished {
        source,
        started,
        timings,
        bytes_in,
        consumer: None,
    };
    observe_finished(series, snap, resp, None, finished)
}

/// The count of a finished request, when a prometheus instance applies to its series. `upstream`: the
/// upstream's fields when the response's map does not hold them.
#[inline]
pub(crate) fn observe_finished(
    series: Series,
    snap: &Snapshot,
    resp: &Response<ProxyBody>,
    upstream: Option<&ResponseFields>,
    finished: Finished<'_>,
) -> Option<Count> {
    let meter = series.meter(snap)?;
    let status = resp.status().as_u16();
    Some(match upstream {
        None => meter.observe(series, status, resp.headers(), finished),
        Some(fields) => {
            let length = fields.content_length().unwrap_or(0);
            meter.observe_length(series, status, length, finished)
        }
    })
}
