//! WebSocket upgrades: an HTTP/1.1 request with `Upgrade: websocket` (or h2's extended CONNECT), taken by
//! the request driver ([`crate::handler::route`]) right after routing, as Kong proxies one.
//!
//! It runs in a task of its own, which hands the response head to the driver and outlives it: `access` as
//! for any request (a global `rewrite` ran before routing; a plugin's answer, 401 or 429, means no
//! upgrade), then balance and send with Kong's `Connection: keep-alive, Upgrade` and `Upgrade: websocket`. An upstream that answers
//! anything but 101 is an ordinary response. A 101 goes through `header_filter` to the client; once hyper
//! has sent it and handed over the client's connection, bytes are copied both ways
//! ([`sluice_upstream::tunnel`]) until either side closes or the service's timeouts end it, and the log
//! phase runs then, with the bytes sent to the client.
//!
//! An HTTP/2 client asks with an extended CONNECT (RFC 8441, `:protocol` websocket; the h2 listener
//! advertises it): it is bridged to the HTTP/1.1 upgrade upstream (a GET with a `Sec-WebSocket-Key` of
//! the gateway's), and the upstream's 101 reaches it as a 200, its stream then carrying the tunnel. Any
//! other 2xx would mean the same to the client, so it is a 502 instead; other statuses pass as they are.
//!
//! Other upgrades (`h2c`, ...) are not taken here: they go upstream as ordinary requests without their
//! `Upgrade`, as Kong sends them (its `Upgrade` line is set only for websocket), and a 101 answering them
//! is a 502.

use crate::downstream::{ClientBody, Handed, OwnUpgrade};
use crate::error::Negotiation;
use crate::error::ProxyError;
use crate::exchange::{Exchange, Routed, Sending, Switched, Upgrade};
use crate::handler::{Answer, Scope};
use crate::metrics::{request_length, Finished, Series};
use crate::phases::{self, LogFacts, Outcome};
use crate::snapshot::Snapshot;
use bytes::Bytes;
use http::header::UPGRADE;
use http::{request, Method, Response, Version};
use hyper::ext::Protocol;
use hyper::upgrade::OnUpgrade;
use hyper_util::rt::TokioIo;
use sluice_metrics::Source;
use sluice_plugins::{PluginChain, RequestCtx};
use sluice_upstream::body::{full, ProxyBody};
use sluice_upstream::tunnel;
use std::future::Future;
use std::pin::Pin;
use std::time::Instant;
use tokio::sync::oneshot;

mod h2;
mod owned;

/// The driver's handle on a request that runs in a task of its own (an upgrade, a gRPC call): resolves to
/// the response head (None when the task ended before it had one, answered with `Negotiation`'s error).
pub type Started = (
    Pin<Box<dyn Future<Output = Option<Answer>> + Send>>,
    Negotiation,
);

/// Spawns the rest of a request (`run`, given the sender of its response head) and hands the driver its
/// [`Started`] handle.
pub fn detach<F>(fallback: Negotiation, run: impl FnOnce(oneshot::Sender<Answer>) -> F) -> Started
where
    F: Future<Output = ()> + Send + 'static,
{
    let (head_tx, head_rx) = oneshot::channel();
    tokio::spawn(run(head_tx));
    (Box::pin(async move { head_rx.await.ok() }), fallback)
}

/// The start both detached kinds share, after the driver routed the request: its context and chain, and
/// what its count and fallback answer need.
pub struct Opened<'a> {
    pub ctx: RequestCtx<'a>,
    pub chain: &'a PluginChain,
    pub series: Series,
    pub bytes_in: u64,
    negotiation: Negotiation,
}

impl<'a> Opened<'a> {
    pub fn new(
        parts: request::Parts,
        routed: &Routed,
        snap: &'a Snapshot,
        x: &Exchange<'a>,
        captures: Option<&'a sluice_router::Captures>,
    ) -> Opened<'a> {
        let index = routed.found.id;
        let series = Series(index);
        let negotiation = Negotiation::of(&parts);
        let mut ctx = phases::new_ctx(parts, snap, x, Some(index), routed.client_ip);
        ctx.captures = captures;
        let bytes_in = series
            .meter(snap)
            .map_or(0, |_| request_length(&ctx.request));
        Opened {
            ctx,
            chain: snap.plugins.route_chain(index),
            series,
            bytes_in,
            negotiation,
        }
    }

    /// Steps 6 to 9 for an answer that is neither a tunnel nor a relayed call, as for any request.
    pub async fn answer(
        self,
        outcome: Outcome,
        x: &Exchange<'_>,
        snap: &Snapshot,
        head_tx: oneshot::Sender<Answer>,
    ) {
        let (series, bytes_in) = (self.series, self.bytes_in);
        let done = phases::header_filter(self.ctx, self.chain, outcome, &self.negotiation, x);
        let count = series
            .meter(snap)
            .map(|m| done.observe(m, series, snap, bytes_in, x.started));
        phases::stream(done, count, head_tx, snap).await;
    }
}

/// The client's side of a WebSocket upgrade: its connection (HTTP/1.1, from Sluice's own server) or its
/// stream (h2, from hyper).
pub struct Client {
    on: Handle,
    /// An HTTP/2 extended CONNECT (RFC 8441), bridged to an HTTP/1.1 upgrade upstream.
    h2: bool,
}

/// Where the client's side of the tunnel comes from once the 101 (or h2's 200) is written.
enum Handle {
    H1(oneshot::Receiver<Handed>),
    H2(OnUpgrade),
}

impl Handle {
    /// The client's connection or stream, once the answer is written; None when the client went away.
    /// Both as the HTTP/1.1 connection hands itself over (boxed once: every read and write of the tunnel
    /// goes through one dynamic call, not two).
    async fn opened(self) -> Option<Handed> {
        match self {
            Handle::H1(rx) => rx.await.ok(),
            Handle::H2(on) => match on.await {
                Ok(upgraded) => Some(Handed::new(Bytes::new(), Box::new(TokioIo::new(upgraded)))),
                Err(e) => {
                    tracing::debug!(error = %e, "client stream was not upgraded");
                    None
                }
            },
        }
    }
}

/// The client's side of the upgrade when the request asks to switch to WebSocket. The HTTP/1.1 server
/// attaches one only to requests with an `Upgrade` header, and hyper only to h2 CONNECT requests, so for
/// all others this is an empty-map check.
#[inline]
pub fn websocket(parts: &mut request::Parts) -> Option<Client> {
    if parts.extensions.is_empty() {
        return None;
    }
    take_websocket(parts)
}

#[cold]
fn take_websocket(parts: &mut request::Parts) -> Option<Client> {
    let h2 = parts.version == Version::HTTP_2;
    let asked = match h2 {
        // RFC 8441: CONNECT with `:protocol` websocket.
        true => {
            parts.method == Method::CONNECT
                && parts
                    .extensions
                    .get::<Protocol>()
                    .is_some_and(|p| p.as_str().eq_ignore_ascii_case("websocket"))
        }
        // Kong's test: the `Upgrade` value, lowercased, is `websocket`.
        false => parts
            .headers
            .get(UPGRADE)
            .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"websocket")),
    };
    if !asked {
        return None;
    }
    let on = match h2 {
        true => Handle::H2(parts.extensions.remove::<OnUpgrade>()?),
        false => Handle::H1(parts.extensions.remove::<OwnUpgrade>()?.take()?),
    };
    Some(Client { on, h2 })
}

/// The upstream request of an upgrade, from the plugins' edited head: Kong's upgrade lines, and for an
/// extended CONNECT the HTTP/1.1 handshake it stands for.
fn prepare(
    ctx: &mut RequestCtx<'_>,
    chain: &PluginChain,
    body: ProxyBody,
    routed: Routed,
    snap: &Snapshot,
    x: &Exchange<'_>,
    h2: bool,
) -> Result<(Sending, Option<String>), ProxyError> {
    if h2 {
        h2::as_http1_handshake(&mut ctx.request);
    }
    let (mut sending, uri) = phases::prepare(ctx, chain, body, routed, snap, x)?;
    sending.upgrade_websocket();
    Ok((sending, uri))
}

/// Starts the upgrade's task; the driver awaits the head it hands over. Cold and out of line: the driver
/// is the hot path, and this branch's moves and spawn would otherwise weigh on every request's code.
#[cold]
#[inline(never)]
pub fn start(
    client: Client,
    parts: request::Parts,
    body: ClientBody,
    routed: Routed,
    scope: &Scope,
) -> Started {
    let (fallback, scope) = (Negotiation::of(&parts), scope.clone());
    detach(fallback, |head| {
        run(client, parts, body, routed, scope, head)
    })
}

/// Steps 4 to 9 of an upgrade request, in its task.
async fn run(
    client: Client,
    parts: request::Parts,
    body: ClientBody,
    mut routed: Routed,
    scope: Scope,
    head_tx: oneshot::Sender<Answer>,
) {
    let (snap, x) = (&*scope.snap, scope.exchange());
    let captures = routed.found.captures.take();
    let mut opened = Opened::new(parts, &routed, snap, &x, captures.as_ref());
    // 4. access, then 5. balance and send unless a plugin answered.
    let (chain, ctx) = (opened.chain, &mut opened.ctx);
    let outcome = match phases::access(ctx, chain, body, None).await {
        Err(answered) => answered,
        Ok(body) => match prepare(ctx, chain, body, routed, snap, &x, client.h2) {
            Err(e) => Outcome::Failed(e),
            Ok((sending, uri)) => match sending.send_upgrade(snap, &x, Instant::now()).await {
                Ok(Upgrade::Switched(switched)) => {
                    let tunnel = Tunnel {
                        ctx: opened.ctx,
                        chain,
                        series: opened.series,
                        bytes_in: opened.bytes_in,
                        uri,
                    };
                    // A copy of the request's `Accept`, sharing the client's read buffer.
                    drop(opened.negotiation);
                    return tunnel.run(switched, client, head_tx, &scope).await;
                }
                // A 2xx accepts an extended CONNECT (RFC 8441 §5, RFC 9113 §8.5): relayed, it would tell
                // the client its tunnel is open when the upstream never switched.
                Ok(Upgrade::Refused(p)) if client.h2 && p.head.status.is_success() => {
                    Outcome::Failed(ProxyError::BadGateway)
                }
                Ok(Upgrade::Refused(p)) => Outcome::Upstream(p, uri),
                Err(e) => Outcome::Failed(e),
            },
        },
    };
    // No upgrade: 6. to 9. as for any request.
    opened.answer(outcome, &x, snap, head_tx).await;
}

/// An upgrade the upstream accepted, with what its log phase needs.
struct Tunnel<'a> {
    ctx: RequestCtx<'a>,
    chain: &'a PluginChain,
    series: Series,
    bytes_in: u64,
    uri: Option<String>,
}

impl Tunnel<'_> {
    /// 6. `header_filter` on the 101, 7. its count, then the tunnel, and 9. `log` when it closes.
    async fn run(
        mut self,
        switched: Switched,
        client: Client,
        head_tx: oneshot::Sender<Answer>,
        scope: &Scope,
    ) {
        let Switched {
            mut head,
            conn,
            timings,
            tries,
            inflight,
            timeouts,
        } = switched;
        let (snap, started) = (&*scope.snap, scope.started);
        if client.h2 {
            h2::as_h2_answer(&mut head);
        }
        phases::filter_head(&mut self.ctx, self.chain, &mut head);
        // Kept until the log phase: not on the read buffers they were parsed from.
        owned::own_request(&mut self.ctx.request);
        owned::own_headers(&mut head.headers);
        let count = self.series.meter(snap).map(|meter| {
            let finished = Finished {
                source: Source::Service,
                started,
                timings: Some(&timings),
                bytes_in: self.bytes_in,
                consumer: None,
            };
            phases::observe(&self.ctx, &head, meter, self.series, snap, finished)
        });
        let log = LogFacts::new(&head, Source::Service, started);
        let response = Response::from_parts(head, full(Bytes::new()));
        phases::hand_over(head_tx, (response, count), snap);
        // Resolves once the 101 is written (None when the client went away first).
        let moved = match client.on.opened().await {
            Some(io) => Some(tunnel::run(io, conn, timeouts).await),
            None => None,
        };
        drop(inflight);
        if let Some(m) = &moved {
            tracing::debug!(end = ?m.end, to_upstream = m.to_upstream, to_client = m.to_client, "tunnel closed");
        }
        let upstream = phases::Upstream {
            timings,
            tries,
            uri: self.uri,
        };
        // As nginx counts an upgraded request: the response's size has every byte sent to the client, the
        // request's is the handshake request's alone (`$request_length`).
        let record = log.record(&self.ctx, moved.map_or(0, |m| m.to_client), Some(upstream));
        self.chain.log(&self.ctx, &record);
    }
}
