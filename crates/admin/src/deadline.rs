//! A connection that must say something within a deadline.
//!
//! hyper's HTTP/1 header timeout starts only once hyper-util's auto builder has read enough bytes to tell
//! HTTP/1 from h2c; before that a silent client would hold its connection forever. [`FirstByte`] wraps the
//! connection's I/O and fails its reads once the deadline passes without a single byte read; from the
//! first byte on, the protocol's own timeouts take over and the wrapper only forwards.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Sleep;

/// `io`, whose reads fail with `TimedOut` when no byte arrived within the deadline.
pub struct FirstByte<T> {
    io: T,
    /// Armed until the first byte is read.
    deadline: Option<Pin<Box<Sleep>>>,
}

impl<T> FirstByte<T> {
    pub fn new(io: T, within: Duration) -> FirstByte<T> {
        FirstByte {
            io,
            deadline: Some(Box::pin(tokio::time::sleep(within))),
        }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for FirstByte<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let read = Pin::new(&mut self.io).poll_read(cx, buf);
        match (&read, self.deadline.as_mut()) {
            (_, None) => {}
            (Poll::Ready(_), Some(_)) => {
                if buf.filled().len() > before {
                    self.deadline = None;
                }
            }
            (Poll::Pending, Some(deadline)) => {
                if deadline.as_mut().poll(cx).is_ready() {
                    let silent = io::Error::new(
                        io::ErrorKind::TimedOut,
                        "no request within the header timeout",
                    );
                    return Poll::Ready(Err(silent));
                }
            }
        }
        read
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for FirstByte<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }
}
