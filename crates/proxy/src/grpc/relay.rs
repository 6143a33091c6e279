//! The upstream's answer to a gRPC call on its way to the client: `header_filter`, the head handed to the
//! driver, then the body's frames (data and trailers) relayed as they come through `body_filter`, each
//! within the service's `read_timeout` of the last (and while the upstream keeps taking the rest of the
//! request within `write_timeout`), and `log` once the call ended.
//!
//! A chain that neither filters bodies nor logs has nothing to run after the head: the upstream's body
//! (with its timeouts) is then the response's body as it is, polled by the client's stream itself, and
//! the call can run inline in that stream's task ([`super::start`]).

use super::send::Sent;
use crate::handler::{Answer, Scope};
use crate::metrics::{Finished, Series};
use crate::phases::{self, LogFacts, Upstream};
use bytes::Bytes;
use http::Response;
use http_body::{Body, Frame};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use sluice_metrics::Source;
use sluice_plugins::grpc_hooks::CarriedTrailers;
use sluice_plugins::{PluginChain, RequestCtx};
use sluice_upstream::body::{box_err, BoxError, ChannelBody};
use sluice_upstream::h2::{Lease, WriteWatch};
use sluice_upstream::health::InFlight;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::sync::oneshot;
use tokio::time::{Instant, Sleep};

/// A call the upstream answered, with what its later phases need.
pub struct Call<'a> {
    pub ctx: RequestCtx<'a>,
    pub chain: &'a PluginChain,
    pub series: Series,
    pub bytes_in: u64,
}

impl Call<'_> {
    /// 6. `header_filter`, 7. the count, 8. the body through `body_filter`, and 9. `log`.
    pub async fn relay(mut self, sent: Sent, head_tx: oneshot::Sender<Answer>, scope: &Scope) {
        let Sent {
            mut head,
            body,
            timings,
            tries,
            read_timeout,
            inflight,
            lease,
            write_watch,
        } = sent;
        let (snap, started, chain) = (&*scope.snap, scope.started, self.chain);
        phases::filter_head(&mut self.ctx, chain, &mut head);
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
        let filtering = chain.has_body_filter();
        let held = (inflight, lease);
        if !(filtering || chain.has_log()) {
            // Nothing after the head: the body goes as it is (see the module's doc).
            let body = Gapped::new(body, read_timeout, None, write_watch, held);
            let response = Response::from_parts(head, body.boxed());
            return phases::hand_over(head_tx, (response, count), snap);
        }
        if filtering {
            head.headers.remove(http::header::CONTENT_LENGTH);
        }
        let log = LogFacts::new(&head, Source::Service, started);
        let (tx, channel) = ChannelBody::channel();
        let response = Response::from_parts(head, channel.boxed());
        phases::hand_over(head_tx, (response, count), snap);
        // A plugin that carries the trailers in the body (grpc-web) gets them before its last call.
        let carried = filtering
            .then(|| self.ctx.plugin_data.get::<CarriedTrailers>().cloned())
            .flatten();
        let body = Gapped::new(body, read_timeout, carried, write_watch, held);
        // The pump drops the body, and with it the call's hold on its target and connection, at its end.
        let bytes = phases::pump(body, tx, chain, &mut self.ctx, filtering).await;
        if chain.has_log() {
            let uri = self
                .ctx
                .request
                .uri
                .path_and_query()
                .map(|p| p.as_str().to_owned());
            let upstream = Upstream {
                timings,
                tries,
                uri,
            };
            let record = log.record(&self.ctx, bytes, Some(upstream));
            chain.log(&self.ctx, &record);
        }
    }
}

/// The upstream's body, failing when it is silent for longer than `gap` between two frames (nginx's
/// `grpc_read_timeout`), or stops taking the rest of the request body for `write_timeout` (a streaming
/// call's upload goes on after the head). Its trailers go to `carried` instead of the client when a
/// plugin asked for them. It holds the call's count against its target and its lease on the connection
/// until it is dropped, when the call ended.
struct Gapped {
    inner: Incoming,
    gap: Duration,
    timer: Pin<Box<Sleep>>,
    carried: Option<CarriedTrailers>,
    writes: WriteWatch,
    _held: (Option<InFlight>, Lease),
}

impl Gapped {
    fn new(
        inner: Incoming,
        gap: Duration,
        carried: Option<CarriedTrailers>,
        writes: WriteWatch,
        held: (Option<InFlight>, Lease),
    ) -> Gapped {
        let timer = Box::pin(tokio::time::sleep(gap));
        Gapped {
            inner,
            gap,
            timer,
            carried,
            writes,
            _held: held,
        }
    }
}

/// Why a call's relay stopped: the upstream was silent, or took no request data.
#[derive(Debug)]
enum Stalled {
    Read,
    Write,
}

impl std::fmt::Display for Stalled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Stalled::Read => "the upstream was silent for longer than read_timeout",
            Stalled::Write => "the upstream took no request data for longer than write_timeout",
        })
    }
}

impl std::error::Error for Stalled {}

impl Body for Gapped {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(frame) => {
                let next = Instant::now() + this.gap;
                this.timer.as_mut().reset(next);
                let frame = match (frame, &this.carried) {
                    (Some(Ok(f)), Some(carried)) if f.is_trailers() => {
                        carried.carry(f.into_trailers().unwrap_or_default());
                        return Poll::Ready(None);
                    }
                    (frame, _) => frame,
                };
                Poll::Ready(frame.map(|f| f.map_err(box_err)))
            }
            Poll::Pending => {
                if this.timer.as_mut().poll(cx).is_ready() {
                    return Poll::Ready(Some(Err(box_err(Stalled::Read))));
                }
                match this.writes.poll_stalled(cx) {
                    Poll::Ready(()) => Poll::Ready(Some(Err(box_err(Stalled::Write)))),
                    Poll::Pending => Poll::Pending,
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }
}
