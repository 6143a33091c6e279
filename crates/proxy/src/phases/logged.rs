//! Chains that log but filter no body: the log phase runs when hyper drops the response body (after the
//! last byte, or when the client went away), on the worker, with no task or channel per request.
//!
//! The request's context borrows from the snapshot, so it is [`Detached`] (references become indices and
//! ids, the snapshot is held by an `Arc`) when the head is handed to hyper, and attached again to run the
//! log phase (or to go on with `access`, [`super::access_first`]).

use super::ctx::route_and_service;
use super::streaming::{LogFacts, Upstream};
use super::{HeadDone, Payload};
use crate::snapshot::Snapshot;
use bytes::Bytes;
use http::{request, Response};
use http_body::{Body, Frame, SizeHint};
use http_body_util::BodyExt;
use sluice_plugins::{BodyLimit, CredentialRef, RequestCtx};
use sluice_router::Captures;
use sluice_upstream::body::{full, BoxError, ProxyBody};
use sluice_upstream::readahead::UpstreamBody;
use sluice_upstream::request_id;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Instant, SystemTime};
use uuid::Uuid;

/// The response of a chain that logs but filters no body: a plugin's or the gateway's answer is logged
/// now; the upstream's body is wrapped so that the log phase runs when it is done.
pub(super) fn respond(
    done: HeadDone<'_>,
    route: usize,
    captures: Option<Captures>,
    snap: Arc<Snapshot>,
    id: [u8; 32],
) -> Response<ProxyBody> {
    let HeadDone {
        ctx,
        chain,
        head,
        payload,
        source,
    } = done;
    let log = LogFacts::new(&head, source, ctx.started);
    match payload {
        Payload::Whole(bytes) => {
            let record = log.record(&ctx, bytes.len() as u64, None);
            chain.log(&ctx, &record);
            Response::from_parts(head, full(bytes))
        }
        Payload::Streamed { body, upstream } => {
            let pending = PendingLog {
                ctx: Detached::new(ctx, route),
                snap,
                id,
                captures,
                log,
                upstream,
            };
            Response::from_parts(head, LoggedBody::new(body, Box::new(pending)).boxed())
        }
    }
}

/// A [`RequestCtx`] without borrows.
pub(crate) struct Detached {
    request: request::Parts,
    body: Option<Bytes>,
    client_addr: SocketAddr,
    client_ip: IpAddr,
    peer_trusted: bool,
    scheme: &'static str,
    tls: Option<sluice_tls::Negotiated>,
    server_port: u16,
    route: usize,
    consumer: Option<Uuid>,
    credential: Option<CredentialRef>,
    anonymous: bool,
    started: Instant,
    started_wall: SystemTime,
    plugin_data: http::Extensions,
    response_headers: sluice_plugins::AddedHeaders,
    body_limit: Option<BodyLimit>,
}

impl Detached {
    /// `route` is the index of the matched route in the snapshot the context was built on.
    pub(super) fn new(ctx: RequestCtx<'_>, route: usize) -> Detached {
        Detached {
            request: ctx.request,
            body: ctx.body,
            client_addr: ctx.client_addr,
            client_ip: ctx.client_ip,
            peer_trusted: ctx.peer_trusted,
            scheme: ctx.scheme,
            tls: ctx.tls,
            server_port: ctx.server_port,
            route,
            consumer: ctx.consumer.map(|c| c.id),
            credential: ctx.credential,
            anonymous: ctx.anonymous,
            started: ctx.started,
            started_wall: ctx.started_wall,
            plugin_data: ctx.plugin_data,
            response_headers: ctx.response_headers,
            body_limit: ctx.body_limit,
        }
    }

    /// The context again, on the same snapshot.
    pub(super) fn attach<'s>(
        self,
        snap: &'s Snapshot,
        request_id: &'s str,
        captures: Option<&'s Captures>,
    ) -> RequestCtx<'s> {
        let (route, service) = route_and_service(snap, Some(self.route));
        let credentials = snap.plugins.credentials();
        RequestCtx {
            request: self.request,
            body: self.body,
            client_addr: self.client_addr,
            client_ip: self.client_ip,
            peer_trusted: self.peer_trusted,
            scheme: self.scheme,
            tls: self.tls,
            server_port: self.server_port,
            request_id,
            route,
            service,
            captures,
            consumer: self.consumer.and_then(|id| credentials.consumer(&id)),
            credential: self.credential,
            anonymous: self.anonymous,
            credentials,
            body_limit: self.body_limit,
            response_headers: self.response_headers,
            started: self.started,
            started_wall: self.started_wall,
            plugin_data: self.plugin_data,
        }
    }
}

/// Everything the log phase of one request needs once its body is done.
pub(super) struct PendingLog {
    pub snap: Arc<Snapshot>,
    pub id: [u8; 32],
    pub captures: Option<Captures>,
    pub ctx: Detached,
    pub log: LogFacts,
    pub upstream: Upstream,
}

/// The log phase of one request, run by [`LoggedBody`] once `sent` bytes of its body went to the client
/// (a trait, so that a log-only chain can keep its request as it was routed, [`super::log_only`]).
pub(super) trait Finish: Send + Sync {
    fn finish(self: Box<Self>, sent: u64);
}

impl Finish for PendingLog {
    fn finish(self: Box<Self>, sent: u64) {
        let PendingLog {
            snap,
            id,
            captures,
            ctx,
            log,
            upstream,
        } = *self;
        let chain = snap.plugins.route_chain(ctx.route);
        let ctx = ctx.attach(&snap, request_id::as_str(&id), captures.as_ref());
        let record = log.record(&ctx, sent, Some(upstream));
        chain.log(&ctx, &record);
    }
}

/// The upstream's body on its way to the client, counting bytes; runs the log phase when dropped.
pub(super) struct LoggedBody {
    inner: UpstreamBody,
    sent: u64,
    /// Boxed: hyper moves the body around, and this keeps it small.
    pending: Option<Box<dyn Finish>>,
}

impl LoggedBody {
    pub(super) fn new(inner: UpstreamBody, pending: Box<dyn Finish>) -> LoggedBody {
        LoggedBody {
            inner,
            sent: 0,
            pending: Some(pending),
        }
    }
}

impl Body for LoggedBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        if let Poll::Ready(Some(Ok(frame))) = &polled {
            if let Some(data) = frame.data_ref() {
                self.sent += data.len() as u64;
            }
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for LoggedBody {
    fn drop(&mut self) {
        if let Some(pending) = self.pending.take() {
            pending.finish(self.sent);
        }
    }
}
