//! The client's request body as the driver sees it, whichever server read the head: empty, already in the
//! connection's buffer, streamed by the HTTP/1.1 connection task through a one-piece [`Slot`], or hyper's
//! HTTP/2 stream body.
//!
//! The slot is how a request body crosses from the connection task (which owns the socket) to whoever
//! reads it (the upstream writer, a plugin, a task of its own): the reader's first poll says it wants bytes
//! (the cue for `100 Continue`), the task puts one piece in, the reader takes it and asks again. A reader
//! that drops the body says so too, and the task then drains or closes.

use super::stall::Stall;
use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use sluice_upstream::body::ClientTimedOut;
use std::fmt;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

/// A request body from a client.
pub enum ClientBody {
    /// No body (the usual GET).
    Empty,
    /// The whole body, read with the head.
    Full(Option<Bytes>),
    /// Fed by the connection task; `remaining` is what `Content-Length` still promises (None: chunked).
    Streamed {
        slot: Arc<Slot>,
        remaining: Option<u64>,
    },
    /// An HTTP/2 stream's body (hyper's server), with its `client_body_timeout`: a stream whose client
    /// sends nothing while it is read fails with [`ClientBodyError::TimedOut`] (the driver answers 408,
    /// after which hyper resets the rest of the stream).
    H2(hyper::body::Incoming, Stall),
}

/// Why a client's body could not be read.
#[derive(Debug)]
pub enum ClientBodyError {
    /// The HTTP/1.1 framing broke (bad chunk, the client closed early, a read error).
    Framing(String),
    /// hyper's HTTP/2 stream failed.
    H2(hyper::Error),
    /// The client sent nothing for `client_body_timeout` while the body was read.
    TimedOut(ClientTimedOut),
}

impl fmt::Display for ClientBodyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClientBodyError::Framing(e) => write!(f, "client request body: {e}"),
            ClientBodyError::H2(e) => write!(f, "client request body: {e}"),
            ClientBodyError::TimedOut(e) => write!(f, "client request body: {e}"),
        }
    }
}

impl std::error::Error for ClientBodyError {
    /// The timeout's marker, which the upstream writer and the plugins' body reader look for
    /// (`sluice_upstream::body::is_client_timeout`).
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ClientBodyError::TimedOut(e) => Some(e),
            _ => None,
        }
    }
}

impl ClientBody {
    /// An HTTP/2 stream's body, read under `client_body_timeout` (`timeout`).
    pub fn h2(incoming: hyper::body::Incoming, timeout: std::time::Duration) -> ClientBody {
        ClientBody::H2(incoming, Stall::new(timeout))
    }
}

impl Body for ClientBody {
    type Data = Bytes;
    type Error = ClientBodyError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, ClientBodyError>>> {
        match self.get_mut() {
            ClientBody::Empty => Poll::Ready(None),
            ClientBody::Full(bytes) => Poll::Ready(bytes.take().map(|b| Ok(Frame::data(b)))),
            ClientBody::Streamed { slot, remaining } => {
                let got = std::task::ready!(slot.poll_take(cx));
                if let (Some(Ok(b)), Some(n)) = (&got, remaining.as_mut()) {
                    *n = n.saturating_sub(b.len() as u64);
                }
                Poll::Ready(got.map(|r| r.map(Frame::data)))
            }
            ClientBody::H2(incoming, stall) => match Pin::new(incoming).poll_frame(cx) {
                Poll::Ready(frame) => {
                    stall.progressed();
                    Poll::Ready(frame.map(|r| r.map_err(ClientBodyError::H2)))
                }
                Poll::Pending => {
                    std::task::ready!(stall.poll_expired(cx));
                    Poll::Ready(Some(Err(ClientBodyError::TimedOut(ClientTimedOut))))
                }
            },
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            ClientBody::Empty => true,
            ClientBody::Full(b) => b.is_none(),
            ClientBody::Streamed { remaining, .. } => *remaining == Some(0),
            ClientBody::H2(incoming, _) => incoming.is_end_stream(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            ClientBody::Empty => SizeHint::with_exact(0),
            ClientBody::Full(b) => SizeHint::with_exact(b.as_ref().map_or(0, |b| b.len() as u64)),
            ClientBody::Streamed {
                remaining: Some(n), ..
            } => SizeHint::with_exact(*n),
            ClientBody::Streamed { .. } => SizeHint::default(),
            ClientBody::H2(incoming, _) => incoming.size_hint(),
        }
    }
}

impl Drop for ClientBody {
    fn drop(&mut self) {
        if let ClientBody::Streamed { slot, .. } = self {
            slot.reader_gone();
        }
    }
}

/// One piece of body in flight between the connection task (the writer) and the body (the reader).
#[derive(Default)]
pub struct Slot(Mutex<SlotState>);

#[derive(Default)]
struct SlotState {
    piece: Option<Result<Bytes, ClientBodyError>>,
    /// The writer has nothing more to put (the body ended or failed).
    closed: bool,
    /// The reader asked for a piece that is not there yet.
    wanted: bool,
    reader_gone: bool,
    reader: Option<Waker>,
    writer: Option<Waker>,
}

/// What the writer may do next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Want {
    /// The reader waits for a piece.
    Piece,
    /// The reader dropped the body: nobody will read the rest.
    Gone,
}

impl Slot {
    fn state(&self) -> std::sync::MutexGuard<'_, SlotState> {
        // A panic while holding this lock leaves plain data behind: keep going with it.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn poll_take(&self, cx: &mut Context<'_>) -> Poll<Option<Result<Bytes, ClientBodyError>>> {
        let mut s = self.state();
        if let Some(piece) = s.piece.take() {
            s.wanted = false;
            return Poll::Ready(Some(piece));
        }
        if s.closed {
            return Poll::Ready(None);
        }
        s.wanted = true;
        s.reader = Some(cx.waker().clone());
        if let Some(w) = s.writer.take() {
            w.wake();
        }
        Poll::Pending
    }

    fn reader_gone(&self) {
        let mut s = self.state();
        s.reader_gone = true;
        if let Some(w) = s.writer.take() {
            w.wake();
        }
    }

    /// The writer's wait: ready when the reader wants a piece and the slot is empty, or left.
    pub fn poll_want(&self, cx: &mut Context<'_>) -> Poll<Want> {
        let mut s = self.state();
        if s.reader_gone {
            return Poll::Ready(Want::Gone);
        }
        if s.wanted && s.piece.is_none() {
            return Poll::Ready(Want::Piece);
        }
        s.writer = Some(cx.waker().clone());
        Poll::Pending
    }

    /// Puts a piece (`Err`: the body failed) for the reader; `close` when it is the last.
    pub fn put(&self, piece: Option<Result<Bytes, ClientBodyError>>, close: bool) {
        let mut s = self.state();
        s.piece = piece;
        s.closed |= close;
        s.wanted = false;
        if let Some(w) = s.reader.take() {
            w.wake();
        }
    }
}
