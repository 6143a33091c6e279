//! The upstream response body, read straight from its pooled connection: returns the connection to the
//! pool once the body ended on a message boundary, and enforces the read timeout between two reads.

use crate::body::{box_err, BoxError};
use crate::conn::Conn;
use crate::error::UpstreamError;
use crate::health::InFlight;
use crate::pool;
use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use sluice_h1::{BodyDecoder, Decoded, Framing};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

/// An upstream response body, read straight from its connection: returns the connection to the pool once
/// the body ended on a message boundary, and fails when the upstream is silent for longer than the read
/// timeout between two reads.
pub struct PooledBody {
    /// The connection the body is read from; None once the body ended (or failed).
    conn: Option<Conn>,
    decoder: BodyDecoder,
    /// The connection may carry another request after this body.
    reusable: bool,
    read_timeout: Duration,
    timer: Option<Pin<Box<tokio::time::Sleep>>>,
    armed: bool,
    /// Counts the request against its target (least-connections) until the body ends or is dropped.
    inflight: Option<InFlight>,
}

impl PooledBody {
    /// `reusable` is false when the response forbids another request on the connection.
    #[inline]
    pub fn new(conn: Conn, framing: Framing, reusable: bool, read_timeout: Duration) -> Self {
        let mut body = PooledBody {
            conn: Some(conn),
            decoder: BodyDecoder::new(framing),
            reusable,
            read_timeout,
            timer: None,
            armed: false,
            inflight: None,
        };
        if body.decoder.is_done() {
            // An empty body may never be polled: the connection is free already.
            body.release();
        }
        body
    }

    /// Keeps the target's in-flight count up for as long as this body is being read.
    pub fn hold(&mut self, inflight: InFlight) {
        if self.conn.is_some() {
            self.inflight = Some(inflight);
        }
    }

    /// The body needs no more reads: it ended, or all of it (by its length) is in the connection's buffer
    /// already (the usual small response, read with its head).
    #[inline]
    pub fn is_whole(&self) -> bool {
        match (&self.conn, self.decoder.remaining()) {
            (None, _) => true,
            (Some(conn), Some(n)) => conn.buf.len() as u64 >= n,
            (Some(_), None) => false,
        }
    }

    /// The body ended: the connection goes back to the pool when nothing is left over on it.
    fn release(&mut self) {
        self.inflight = None;
        if let Some(conn) = self.conn.take() {
            if self.reusable && conn.buf.is_empty() {
                pool::checkin(conn);
            }
        }
    }

    fn fail(&mut self, e: BoxError) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        self.conn = None;
        self.inflight = None;
        Poll::Ready(Some(Err(e)))
    }

    /// Arms the read timer when the upstream has nothing yet; true when it has expired.
    fn timed_out(&mut self, cx: &mut Context<'_>) -> bool {
        if !self.armed {
            let deadline = tokio::time::Instant::now() + self.read_timeout;
            match &mut self.timer {
                Some(t) => t.as_mut().reset(deadline),
                None => self.timer = Some(Box::pin(tokio::time::sleep_until(deadline))),
            }
            self.armed = true;
        }
        self.timer
            .as_mut()
            .is_some_and(|t| t.as_mut().poll(cx).is_ready())
    }
}

impl Body for PooledBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = &mut *self;
        loop {
            let Some(conn) = this.conn.as_mut() else {
                return Poll::Ready(None);
            };
            match this.decoder.decode(&mut conn.buf) {
                Err(e) => return this.fail(box_err(e)),
                Ok(Decoded::Done) => {
                    this.release();
                    return Poll::Ready(None);
                }
                Ok(Decoded::Data(data)) => {
                    this.armed = false;
                    if this.decoder.is_done() {
                        this.release();
                    }
                    return Poll::Ready(Some(Ok(Frame::data(data))));
                }
                Ok(Decoded::NeedMore) => {}
            }
            match conn.poll_read_more(cx) {
                Poll::Ready(Ok(0)) => match this.decoder.eof() {
                    Ok(()) => {
                        this.reusable = false;
                        this.release();
                        return Poll::Ready(None);
                    }
                    Err(e) => return this.fail(box_err(e)),
                },
                Poll::Ready(Ok(_)) => this.armed = false,
                Poll::Ready(Err(e)) => return this.fail(box_err(e)),
                Poll::Pending => {
                    if this.timed_out(cx) {
                        return this.fail(box_err(UpstreamError::Timeout));
                    }
                    return Poll::Pending;
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.conn.is_none() || self.decoder.is_done()
    }

    fn size_hint(&self) -> SizeHint {
        match self.decoder.remaining() {
            Some(n) => SizeHint::with_exact(n),
            None if self.is_end_stream() => SizeHint::with_exact(0),
            None => SizeHint::default(),
        }
    }
}
