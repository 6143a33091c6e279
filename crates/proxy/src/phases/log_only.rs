//! Routes whose plugins only log (http-log, file-log, tcp-log, statsd, ...: no `access`,
//! `header_filter` or `body_filter` handler, no request body to read; [`PluginChain::only_logs`]).
//!
//! Like a route without plugins, the upstream request is written before the driver's future exists;
//! unlike it, the client's request head is kept for the log record, and the log phase runs when hyper
//! drops the response body ([`super::logged`]), or at once for the gateway's own error. The plugin
//! context is built only then: the phases before it have no handler, so skipping them is what running
//! them would do, and the general path's boxed steps, empty phase loops and moves of the context cost
//! every log plugin thousands of instructions per request (issue 24). As on the fast path, Kong's
//! response headers and the upstream's fields are left to the HTTP/1.1 writer ([`Step::Logged`]); the
//! record's copy of the head gets them from the same facts ([`super::log_fields`]).

use super::logged::{Finish, LoggedBody};
use super::new_ctx;
use super::streaming::{LogFacts, Upstream};
use crate::downstream::ClientBody;
use crate::error::{error_parts, Negotiation, ProxyError};
use crate::exchange::{Late, Routed, Sending};
use crate::handler::{observe, observe_finished, Answer, Scope, Step};
use crate::in_place;
use crate::metrics::{request_length, Finished, Series};
use crate::respond::LateHeaders;
use http::{request, Response};
use http_body_util::BodyExt;
use sluice_metrics::Source;
use sluice_plugins::{AddedHeaders, PluginChain};
use sluice_router::Captures;
use sluice_upstream::body::{box_err, full};
use std::net::IpAddr;

/// What the log phase needs of the request, kept as routed while it is proxied: its context is built
/// once, when the log phase runs, rather than built, detached and attached again around the upstream
/// wait. Boxed once, when the request is routed: the future then holds a pointer, and the same box
/// becomes the body's pending log phase ([`LoggedBody`]), so the request head is not copied again.
struct Kept {
    request: request::Parts,
    captures: Option<Captures>,
    client_ip: IpAddr,
    route: usize,
    negotiation: Negotiation,
    bytes_in: u64,
    /// The request's own (its snapshot and connection facts are what the log phase's context is built on).
    scope: Scope,
    /// The response's facts, set once it is known (the log phase has nothing to log before).
    log: Option<LogFacts>,
    /// None for the gateway's error.
    upstream: Option<Upstream>,
}

impl Finish for Kept {
    fn finish(self: Box<Self>, sent: u64) {
        let Kept {
            request,
            captures,
            client_ip,
            route,
            scope,
            log: Some(log),
            upstream,
            ..
        } = *self
        else {
            return;
        };
        let (snap, x) = (&*scope.snap, scope.exchange());
        let mut ctx = new_ctx(request, snap, &x, Some(route), client_ip);
        ctx.captures = captures.as_ref();
        let chain: &PluginChain = snap.plugins.route_chain(route);
        chain.log(&ctx, &log.record(&ctx, sent, upstream));
    }
}

/// Steps 4 to 9 of a routed request whose chain only logs: the upstream request is written now; the
/// rest is one boxed future (or, when the request cannot be sent, the logged error at once).
pub(crate) fn start(
    parts: request::Parts,
    body: ClientBody,
    mut routed: Routed,
    negotiation: Negotiation,
    scope: &Scope,
) -> Step {
    let (snap, x) = (&*scope.snap, scope.exchange());
    let route = routed.found.id;
    let bytes_in = Series(route)
        .meter(snap)
        .map_or(0, |_| request_length(&parts));
    let captures = routed.found.captures.take();
    let client_ip = routed.client_ip;
    let body = body.map_err(box_err).boxed();
    let sent = Sending::prepare(&parts, body, routed, None, captures.as_ref(), snap, &x);
    // Both made in their boxes: `Box::new`/`Box::pin` would build them on the stack and copy them, the
    // future's whole size (its unused states included). `Kept` is written into its box here rather than
    // through a closure (`in_place::boxed`'s shape): a closure takes its fields by move first, one more
    // copy of each (+135 instructions per request, measured).
    let kept = Box::write(
        Box::new_uninit(),
        Kept {
            negotiation,
            request: parts,
            captures,
            client_ip,
            route,
            bytes_in,
            scope: scope.clone(),
            log: None,
            upstream: None,
        },
    );
    match sent {
        // `send` itself is the boxed future (not a wrapper around it): its state is built once, in its box.
        Ok(sending) => Step::Logged(in_place::boxed(|| send(sending, kept))),
        Err(e) => Step::Done(failed(e, kept)),
    }
}

/// Steps 5 to 7, then the log phase from the body's drop (or now, for the gateway's error).
///
/// As on the fast path, Kong's headers and the upstream's fields are left to the server
/// ([`Sending::send`]'s `late`, [`Late::All`]): nothing reads the head before it is written but the log
/// record, which renders them from the same facts ([`LogFacts::with_late`]), so no map is made of them and
/// none is given Kong's hashed inserts (issue 24).
async fn send(sending: Sending, mut kept: Box<Kept>) -> (Answer, Option<LateHeaders>) {
    let (snap, x) = (&*kept.scope.snap, kept.scope.exchange());
    let uri = Some(sending.target().to_owned());
    let proxied = match sending.send(snap, &x, x.started, Late::All).await {
        Ok(p) => p,
        Err(e) => return (failed(e, kept), None),
    };
    let (route, bytes_in, timings) = (kept.route, kept.bytes_in, proxied.timings);
    let upstream = proxied.upstream;
    let log = match &proxied.late {
        Some(late) => LogFacts::with_late(&proxied.head, late, upstream.as_ref(), x.started),
        None => LogFacts::new(&proxied.head, Source::Service, x.started),
    };
    // The snapshot outlives `kept`, which the body takes, for the count below.
    let (snap, started) = (kept.scope.snap.clone(), x.started);
    kept.log = Some(log);
    kept.upstream = Some(Upstream {
        timings: proxied.timings,
        tries: proxied.tries,
        uri,
    });
    let body = LoggedBody::new(proxied.body, kept).boxed();
    let resp = Response::from_parts(proxied.head, body);
    let finished = Finished {
        source: Source::Service,
        started,
        timings: Some(&timings),
        bytes_in,
        consumer: None,
    };
    let count = observe_finished(Series(route), &snap, &resp, upstream.as_ref(), finished);
    let late = proxied.late.map(|kong| LateHeaders {
        kong,
        added: AddedHeaders::new(),
        upstream,
    });
    ((resp, count), late)
}

/// The gateway's error for a request that could not be proxied, logged now.
fn failed(e: ProxyError, mut kept: Box<Kept>) -> Answer {
    let (snap, x) = (&*kept.scope.snap, kept.scope.exchange());
    let (head, bytes) = error_parts(e, &kept.negotiation, &x).into_parts();
    let log = LogFacts::new(&head, Source::Error, x.started);
    let sent = bytes.len() as u64;
    let resp = Response::from_parts(head, full(bytes));
    let series = Series(kept.route);
    let count = observe(
        series,
        snap,
        &resp,
        Source::Error,
        None,
        kept.bytes_in,
        x.started,
    );
    kept.log = Some(log);
    kept.finish(sent);
    (resp, count)
}
