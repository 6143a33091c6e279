//! One client's HTTP/1.1 connection, request after request: read a head (its buffer made only when bytes
//! arrive and given back when the connection goes idle), hand the request to the driver, feed its body
//! while the driver runs, write the response, then read the next head (pipelined bytes first).
//!
//! The loop ends when the client closes or asks to, after a refused head (answered first), when a body or
//! write fails, when the worker stops (after the request in flight), or after a 101 (the connection is
//! handed to the upgrade). The header and keep-alive timeouts are the watchdog's: it drops this future.
//! The body and send timeouts (`client_body_timeout`, `send_timeout`) are the feeder's and the writer's:
//! they bound each wait on this client while a request runs ([`super::stall`]).

use super::body::{ClientBody, Slot};
use super::feed::{Fed, Feeder};
use super::handover::{Handed, OwnUpgrade};
use super::spare;
use super::write::{self, Facts, Writer};
use super::Transport;
use super::CLIENT_MIN_SPARE;
use crate::exchange::ConnInfo;
use crate::handler;
use crate::in_place;
use crate::shared::Shared;
use crate::stats::Counters;
use crate::watchdog::ConnState;
use bytes::BytesMut;
use http::{Method, Request, StatusCode, Version};
use sluice_h1::{parse_request, BodyDecoder, RequestError, RequestFraming, RequestHead};
use sluice_upstream::conn::poll_read_into;
use std::future::{poll_fn, Future};
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::sync::{oneshot, watch};

/// The first read's room: most heads fit (a bigger one grows the buffer).
const FIRST_READ: usize = 4 * 1024;

/// What a connection needs besides its socket.
pub struct Conn {
    pub info: Arc<ConnInfo>,
    pub shared: Arc<Shared>,
    pub state: Arc<ConnState>,
    pub stop: watch::Receiver<Option<Duration>>,
}

/// What reading the next head gave. Not boxed: it is moved once per request, and a box would be an
/// allocation per request.
#[allow(clippy::large_enum_variant)]
enum Next {
    Request(RequestHead),
    /// The client closed, went silent past what the loop waits for, or the worker stops.
    Closed,
    Refused(RequestError),
    /// An h2 client with prior knowledge on a plain listener.
    H2,
}

/// The HTTP/2 connection preface (RFC 9113 §3.4).
const H2_PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

impl Conn {
    /// Serves the connection until it ends; an h2 client with prior knowledge is handed to `h2` with what
    /// was read.
    pub async fn serve<IO, H, F>(mut self, mut io: IO, h2: H)
    where
        IO: Transport,
        H: FnOnce(Handed) -> F,
        F: Future<Output = ()>,
    {
        let mut buf = BytesMut::new();
        loop {
            let head = match self.next_head(&mut io, &mut buf).await {
                Next::Request(head) => head,
                Next::Closed => return,
                // Boxed: hyper's h2 connection state is large, and inline it sized every HTTP/1.1
                // connection's future for it (5.3 KB per idle connection, heaptrack).
                Next::H2 => return Box::pin(h2(Handed::new(buf.split(), Box::new(io)))).await,
                Next::Refused(e) => {
                    let send_timeout = self.shared.settings.send_timeout;
                    return refuse(&mut io, e, send_timeout).await;
                }
            };
            // Boxed per request (one allocation): the request's state (the driver's future, the writer)
            // is freed when it ends instead of sizing the connection's future for good. Made in its box:
            // `Box::pin` would build the ~4 KB future on the stack and copy it over.
            let keep = match in_place::boxed(|| self.exchange(head, &mut io, &mut buf)).await {
                Ended::Keep => true,
                Ended::Close => false,
                Ended::Upgraded(handover) => {
                    let _ = handover.send(Handed::new(buf.split(), Box::new(io)));
                    return;
                }
            };
            if !keep {
                let _ = io.shutdown().await;
                return;
            }
        }
    }

    /// Reads until a whole head is in `buf`. An empty buffer is given back while the client is quiet.
    async fn next_head<IO: Transport>(&mut self, io: &mut IO, buf: &mut BytesMut) -> Next {
        loop {
            if !buf.is_empty() {
                if buf.len() < H2_PREFACE.len() && H2_PREFACE.starts_with(buf)
                    || buf.starts_with(H2_PREFACE)
                {
                    if buf.len() >= H2_PREFACE.len() {
                        return Next::H2;
                    }
                } else {
                    match parse_request(buf, self.shared.settings.head_limits) {
                        Ok(Some(head)) => return Next::Request(head),
                        Ok(None) => {}
                        Err(e) => return Next::Refused(e),
                    }
                }
            } else if self.stop.borrow().is_some() {
                return Next::Closed;
            }
            if buf.capacity() == 0 {
                *buf = spare::take(FIRST_READ);
            }
            // A read now: under load the next head is often there already.
            let read =
                poll_fn(|cx| Poll::Ready(poll_read_into(cx, io, buf, CLIENT_MIN_SPARE))).await;
            match read {
                Poll::Ready(Ok(0)) | Poll::Ready(Err(_)) => return Next::Closed,
                Poll::Ready(Ok(_)) => continue,
                Poll::Pending => {}
            }
            if buf.is_empty() {
                // Quiet: the connection holds no buffer until the client speaks again (the worker keeps it
                // for whichever connection speaks next). The read above saw the socket empty, so its next
                // readiness is real.
                spare::give(std::mem::take(buf));
            }
            let ready = poll_fn(|cx| io.poll_ready_to_read(cx));
            tokio::select! {
                _ = ready => {}
                _ = self.stop.wait_for(Option::is_some), if buf.is_empty() => return Next::Closed,
            }
        }
    }

    /// One request, from its head to the end of its response.
    async fn exchange<IO: Transport>(
        &mut self,
        head: RequestHead,
        io: &mut IO,
        buf: &mut BytesMut,
    ) -> Ended {
        let RequestHead {
            method,
            uri,
            version,
            headers,
            framing,
            keep_alive,
            expect_continue,
            upgrade,
        } = head;
        let head_request = method == Method::HEAD;
        let body_timeout = self.shared.settings.client_body_timeout;
        let (body, mut feeder) = body(framing, expect_continue, buf, body_timeout);
        let mut request = Request::new(body);
        *request.method_mut() = method;
        *request.uri_mut() = uri;
        *request.version_mut() = version;
        *request.headers_mut() = headers;
        let handover = upgrade.then(|| {
            let (own, tx) = OwnUpgrade::pair();
            request.extensions_mut().insert(own);
            tx
        });
        Counters::bump(&self.shared.counters.requests);
        let in_flight = self.state.request_started();
        // Pinned where it is made: a `let` first, then `pin!`, copied the ~2.7 KB future once more.
        let mut answer = std::pin::pin!(handler::handle(
            request,
            self.info.clone(),
            self.shared.clone(),
            in_flight
        ));
        // The driver runs; the request body is fed as it is read.
        let response = poll_fn(|cx| {
            if let Poll::Ready(r) = answer.as_mut().poll(cx) {
                return Poll::Ready(r);
            }
            if let Some(f) = feeder.as_mut() {
                let _ = f.poll_feed(cx, io, buf);
            }
            Poll::Pending
        })
        .await;
        let (parts, body) = response.response.into_parts();
        let upgraded = parts.status == StatusCode::SWITCHING_PROTOCOLS && handover.is_some();
        let facts = Facts {
            head_request,
            http10: version == Version::HTTP_10,
            // `keepalive_timeout 0` turns keep-alive off, as in nginx; a body that broke off, broke its
            // framing or stalled past `client_body_timeout` closes the connection after the answer.
            keep_alive: keep_alive
                && !self.shared.settings.keepalive_timeout.is_zero()
                && self.stop.borrow().is_none()
                && !upgraded
                && feeder.as_ref().is_none_or(|f| f.state() != Fed::Broken),
        };
        // Room for the head and a small body; more for plugins' headers written late (rate-limiting's
        // five): growing it copies what is written so far.
        let kong = response.late.as_ref();
        let room = match kong.is_some_and(|late| !late.added.is_empty()) {
            true => 1024,
            false => 512,
        };
        let mut out = Vec::with_capacity(room);
        let hint = http_body::Body::size_hint(&body);
        let (framing, mut keep) = write::head(&mut out, &parts, kong, &hint, facts);
        // The head is on its way: its map serves the next head parsed on this worker.
        sluice_h1::recycle_headers(parts.headers);
        if let Some(f) = feeder.as_mut() {
            f.answered();
        }
        let mut writer = Writer::new(out, body, framing, self.shared.settings.send_timeout);
        let written = poll_fn(|cx| {
            let w = writer.poll_write(cx, io);
            if let Some(f) = feeder.as_mut() {
                let _ = f.poll_feed(cx, io, buf);
            }
            w
        })
        .await;
        // The response's body (and with it the request's in-flight mark) is done.
        drop(writer);
        if let Err(e) = written {
            tracing::debug!(error = %e, "response not written to the end");
            return Ended::Close;
        }
        if upgraded {
            return handover.map_or(Ended::Close, Ended::Upgraded);
        }
        if let Some(mut f) = feeder {
            keep &= match f.state() {
                Fed::Done => true,
                Fed::Broken => false,
                // The request is over: whatever of its body is left is read and thrown away when short.
                Fed::Running | Fed::Abandoned => {
                    f.close_reader();
                    poll_fn(|cx| f.poll_discard(cx, io, buf)).await
                }
            };
        }
        match keep {
            true => Ended::Keep,
            false => Ended::Close,
        }
    }
}

/// How a request left its connection.
enum Ended {
    Keep,
    Close,
    /// A 101: the connection goes to the upgrade's taker.
    Upgraded(oneshot::Sender<Handed>),
}

/// The request body: none, whole from the buffer, or fed by the connection task (each wait for the
/// client's bytes bounded by `timeout`, `client_body_timeout`).
fn body(
    framing: RequestFraming,
    expect_continue: bool,
    buf: &mut BytesMut,
    timeout: Duration,
) -> (ClientBody, Option<Feeder>) {
    match framing {
        RequestFraming::Length(0) => (ClientBody::Empty, None),
        // With `Expect: 100-continue` the 100 goes out when the body is first read, as nginx sends it,
        // even when the client sent the body without waiting.
        RequestFraming::Length(n) if n <= buf.len() as u64 && !expect_continue => (
            ClientBody::Full(Some(buf.split_to(n as usize).freeze())),
            None,
        ),
        framing => {
            let slot = Arc::new(Slot::default());
            let remaining = match framing {
                RequestFraming::Length(n) => Some(n),
                RequestFraming::Chunked => None,
            };
            let decoder = BodyDecoder::new(framing.into());
            let feeder = Feeder::new(slot.clone(), decoder, expect_continue, timeout);
            (ClientBody::Streamed { slot, remaining }, Some(feeder))
        }
    }
}

/// Answers a refused head as nginx does (its status, no body), and closes; a client that does not take
/// the answer within `send_timeout` is closed without it.
async fn refuse<IO: Transport>(io: &mut IO, e: RequestError, send_timeout: Duration) {
    let status = StatusCode::from_u16(e.status()).unwrap_or(StatusCode::BAD_REQUEST);
    let mut out = Vec::with_capacity(160);
    let (mut parts, ()) = http::Response::new(()).into_parts();
    parts.status = status;
    let facts = Facts {
        head_request: false,
        http10: false,
        keep_alive: false,
    };
    write::head(
        &mut out,
        &parts,
        None,
        &http_body::SizeHint::with_exact(0),
        facts,
    );
    let answer = async {
        let _ = io.write_all(&out).await;
        let _ = io.shutdown().await;
    };
    let _ = tokio::time::timeout(send_timeout, answer).await;
}
