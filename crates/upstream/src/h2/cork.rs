//! Small writes to an upstream HTTP/2 connection held back for one turn, so that the frames of a call
//! leave in one write. hyper's client sends a request's HEADERS as soon as the connection opens the
//! stream, and only then lets the body's pipe send its DATA (h2 gives a stream no send capacity before
//! it is opened): a unary gRPC call went out as two writes, and the upstream woke twice to read it.
//!
//! [`Corked`] copies small writes into a buffer. The first flush that finds bytes there is put off
//! once: it wakes its task and says "not yet", so whatever is ready to run before that task's next turn
//! (the body's pipe, other calls) adds its frames first; the next flush writes them all. A large write
//! (a big message) goes straight through, after what is buffered.

use std::io::{self, IoSlice};
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// Writes at least this long are not copied (when nothing is buffered, they go straight on).
const LARGE: usize = 16 * 1024;
/// Buffered bytes past which a write first pushes out what is there.
const LIMIT: usize = 64 * 1024;

/// An upstream connection's stream whose small writes wait for a flush, itself put off once.
pub struct Corked<IO> {
    io: IO,
    buf: Vec<u8>,
    /// How much of `buf` has been written already.
    sent: usize,
    /// The flush that found bytes in `buf` was put off: the next one writes them.
    deferred: bool,
}

impl<IO> Corked<IO> {
    pub fn new(io: IO) -> Corked<IO> {
        Corked {
            io,
            buf: Vec::new(),
            sent: 0,
            deferred: false,
        }
    }
}

impl<IO: AsyncWrite + Unpin> Corked<IO> {
    /// Writes out everything buffered.
    fn poll_drain(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while self.sent < self.buf.len() {
            let n = ready!(Pin::new(&mut self.io).poll_write(cx, &self.buf[self.sent..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.sent += n;
        }
        self.buf.clear();
        self.sent = 0;
        Poll::Ready(Ok(()))
    }

    /// Makes room for `len` more bytes: Ready(true) when they are to be copied, Ready(false) when they
    /// go straight to the stream (nothing is buffered and they are large).
    fn poll_room(&mut self, cx: &mut Context<'_>, len: usize) -> Poll<io::Result<bool>> {
        if self.buf.len() + len > LIMIT || (len >= LARGE && !self.buf.is_empty()) {
            ready!(self.poll_drain(cx))?;
        }
        Poll::Ready(Ok(len < LARGE))
    }
}

impl<IO: AsyncRead + Unpin> AsyncRead for Corked<IO> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl<IO: AsyncWrite + Unpin> AsyncWrite for Corked<IO> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        if !ready!(this.poll_room(cx, data.len()))? {
            return Pin::new(&mut this.io).poll_write(cx, data);
        }
        this.buf.extend_from_slice(data);
        Poll::Ready(Ok(data.len()))
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        let len = bufs.iter().map(|b| b.len()).sum();
        if !ready!(this.poll_room(cx, len))? {
            return Pin::new(&mut this.io).poll_write_vectored(cx, bufs);
        }
        for b in bufs {
            this.buf.extend_from_slice(b);
        }
        Poll::Ready(Ok(len))
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        if this.sent < this.buf.len() && !this.deferred {
            // Put off once: what runs before this task's next turn adds its frames first.
            this.deferred = true;
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        ready!(this.poll_drain(cx))?;
        this.deferred = false;
        Pin::new(&mut this.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.poll_drain(cx))?;
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests;
