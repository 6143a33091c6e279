//! The connection task's side of a streamed request body: while the request runs, it reads body bytes off
//! the socket into the connection's buffer and hands them to the body's reader, one piece per want; it
//! sends `100 Continue` before the first read when the client asked for it (as nginx does, only once the
//! body is really read: a request refused in `access` never gets it).
//!
//! `client_body_timeout` bounds each wait for the client's next bytes while the reader wants them (and
//! while a short rest is discarded): past it the reader gets [`ClientBodyError::TimedOut`] (408) and the
//! connection closes after the answer.

use super::body::{ClientBodyError, Slot, Want};
use super::stall::Stall;
use super::CLIENT_MIN_SPARE;
use bytes::BytesMut;
use sluice_h1::{BodyDecoder, Decoded};
use sluice_upstream::body::ClientTimedOut;
use sluice_upstream::conn::poll_read_into;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite};

/// The most of an unread body the connection reads and throws away to stay reusable (nginx's lingering
/// discard); a longer rest closes the connection instead.
pub const DRAIN_LIMIT: u64 = 64 * 1024;

const CONTINUE: &[u8] = b"HTTP/1.1 100 Continue\r\n\r\n";

/// The request body being fed, or its end.
pub struct Feeder {
    slot: Arc<Slot>,
    decoder: BodyDecoder,
    /// Bytes of `100 Continue` still to write (0 when none is owed or it was sent).
    continue_left: usize,
    state: Fed,
    /// `client_body_timeout` between two reads.
    stall: Stall,
    /// Bytes of an abandoned body thrown away so far (over all the polls of its discard).
    thrown: u64,
}

/// Where the body is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fed {
    /// Pieces are still being handed over.
    Running,
    /// The whole body was read off the connection.
    Done,
    /// The reader dropped the body before its end (the rest is still on the socket).
    Abandoned,
    /// The framing broke, the socket failed or the client stalled past `client_body_timeout`: the
    /// connection cannot be reused.
    Broken,
}

impl Feeder {
    /// `timeout` is `client_body_timeout`.
    pub fn new(
        slot: Arc<Slot>,
        decoder: BodyDecoder,
        expect_continue: bool,
        timeout: std::time::Duration,
    ) -> Feeder {
        Feeder {
            slot,
            decoder,
            continue_left: if expect_continue { CONTINUE.len() } else { 0 },
            state: Fed::Running,
            stall: Stall::new(timeout),
            thrown: 0,
        }
    }

    pub fn state(&self) -> Fed {
        self.state
    }

    /// Feeds pieces while the reader wants them; Pending when it waits for the reader or the socket, Ready
    /// once the body is done, abandoned or broken.
    pub fn poll_feed<IO>(
        &mut self,
        cx: &mut Context<'_>,
        io: &mut IO,
        buf: &mut BytesMut,
    ) -> Poll<Fed>
    where
        IO: AsyncRead + AsyncWrite + Unpin,
    {
        while self.state == Fed::Running {
            match self.slot.poll_want(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Want::Gone) => self.state = Fed::Abandoned,
                Poll::Ready(Want::Piece) => {
                    if self.continue_left > 0 {
                        let sent = CONTINUE.len() - self.continue_left;
                        match Pin::new(&mut *io).poll_write(cx, &CONTINUE[sent..]) {
                            // A client that will not take the `100 Continue` is waited for as for
                            // its body: `client_body_timeout`, then 408.
                            Poll::Pending => {
                                std::task::ready!(self.stall.poll_expired(cx));
                                self.timed_out();
                                continue;
                            }
                            Poll::Ready(Ok(n)) if n > 0 => self.continue_left -= n,
                            Poll::Ready(_) => self.fail("cannot write 100 Continue"),
                        }
                        continue;
                    }
                    match self.decoder.decode(buf) {
                        Ok(Decoded::Data(piece)) => {
                            let last = self.decoder.is_done();
                            self.slot.put(Some(Ok(piece)), last);
                            if last {
                                self.state = Fed::Done;
                            }
                        }
                        Ok(Decoded::Done) => {
                            self.slot.put(None, true);
                            self.state = Fed::Done;
                        }
                        Ok(Decoded::NeedMore) => {
                            match poll_read_into(cx, io, buf, CLIENT_MIN_SPARE) {
                                Poll::Pending => {
                                    std::task::ready!(self.stall.poll_expired(cx));
                                    self.timed_out();
                                }
                                Poll::Ready(Ok(0)) => {
                                    self.fail("the client closed before the body ended")
                                }
                                Poll::Ready(Ok(_)) => self.stall.progressed(),
                                Poll::Ready(Err(e)) => self.fail(&e.to_string()),
                            }
                        }
                        Err(e) => self.fail(&e.to_string()),
                    }
                }
            }
        }
        Poll::Ready(self.state)
    }

    /// The response has begun: a `100 Continue` not yet sent never will be (it would land inside it).
    pub fn answered(&mut self) {
        if self.continue_left == CONTINUE.len() {
            self.continue_left = 0;
        }
    }

    /// The request is over: a reader still holding the body gets an error instead of waiting forever.
    pub fn close_reader(&mut self) {
        if self.state == Fed::Running {
            let ended = ClientBodyError::Framing("the request ended".to_string());
            self.slot.put(Some(Err(ended)), true);
        }
    }

    /// The client waited past `client_body_timeout`: the reader gets the timeout (408).
    fn timed_out(&mut self) {
        self.slot
            .put(Some(Err(ClientBodyError::TimedOut(ClientTimedOut))), true);
        self.state = Fed::Broken;
    }

    fn fail(&mut self, why: &str) {
        let broken = ClientBodyError::Framing(why.to_string());
        self.slot.put(Some(Err(broken)), true);
        self.state = Fed::Broken;
    }

    /// Reads and discards an abandoned body's rest when it is short, so the connection stays reusable:
    /// Ready(true) once it is gone, Ready(false) when the connection must close instead.
    pub fn poll_discard<IO>(
        &mut self,
        cx: &mut Context<'_>,
        io: &mut IO,
        buf: &mut BytesMut,
    ) -> Poll<bool>
    where
        IO: AsyncRead + Unpin,
    {
        if self.decoder.remaining().is_some_and(|n| n > DRAIN_LIMIT) {
            return Poll::Ready(false);
        }
        loop {
            match self.decoder.decode(buf) {
                Ok(Decoded::Data(piece)) => {
                    self.thrown += piece.len() as u64;
                    if self.thrown > DRAIN_LIMIT {
                        return Poll::Ready(false);
                    }
                }
                Ok(Decoded::Done) => {
                    self.state = Fed::Done;
                    return Poll::Ready(true);
                }
                Ok(Decoded::NeedMore) => match poll_read_into(cx, io, buf, CLIENT_MIN_SPARE) {
                    // A client that stalls its rest past `client_body_timeout` loses the connection.
                    Poll::Pending => return self.stall.poll_expired(cx).map(|()| false),
                    Poll::Ready(Ok(n)) if n > 0 => self.stall.progressed(),
                    Poll::Ready(_) => return Poll::Ready(false),
                },
                Err(_) => return Poll::Ready(false),
            }
        }
    }
}
