//! A connection that must say something within a deadline, and take what it is sent.
//!
//! hyper's HTTP/1 header timeout starts only once hyper-util's auto builder has read enough bytes to tell
//! HTTP/1 from h2c; before that a silent client would hold its connection forever. [`ClientDeadlines`] wraps the
//! connection's I/O and fails its reads once the deadline passes without a single byte read; from the
//! first byte on, the protocol's own timeouts take over for reads.
//!
//! hyper's server has no send timeout: a client that stops reading a response would hold its connection
//! (and the response) forever. The wrapper also fails a write that could not progress for `send_timeout`
//! (nginx's meaning: the gap between two writes, not the whole response), which ends the connection.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Sleep;

/// `io`, whose reads fail with `TimedOut` when no byte arrived within the deadline.
pub struct ClientDeadlines<T> {
    io: T,
    /// Armed until the first byte is read.
    deadline: Option<Pin<Box<Sleep>>>,
    send_timeout: Duration,
    /// Armed while a write waits for the client (made at the first such wait).
    write_gap: Option<Pin<Box<Sleep>>>,
    write_waits: bool,
}

impl<T> ClientDeadlines<T> {
    pub fn new(io: T, within: Duration, send_timeout: Duration) -> ClientDeadlines<T> {
        ClientDeadlines {
            io,
            deadline: Some(Box::pin(tokio::time::sleep(within))),
            send_timeout,
            write_gap: None,
            write_waits: false,
        }
    }

    /// After a write step: progress disarms the gap timer; a wait arms it (once per wait) and fails the
    /// step when the client took nothing for `send_timeout`.
    fn bound_write<R>(
        &mut self,
        cx: &mut Context<'_>,
        step: Poll<io::Result<R>>,
    ) -> Poll<io::Result<R>> {
        if step.is_ready() {
            self.write_waits = false;
            return step;
        }
        if !self.write_waits {
            let deadline = tokio::time::Instant::now() + self.send_timeout;
            match &mut self.write_gap {
                Some(t) => t.as_mut().reset(deadline),
                None => self.write_gap = Some(Box::pin(tokio::time::sleep_until(deadline))),
            }
            self.write_waits = true;
        }
        let expired = self
            .write_gap
            .as_mut()
            .is_some_and(|t| t.as_mut().poll(cx).is_ready());
        if expired {
            let stuck = io::Error::new(
                io::ErrorKind::TimedOut,
                "the client took nothing within the send timeout",
            );
            return Poll::Ready(Err(stuck));
        }
        Poll::Pending
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for ClientDeadlines<T> {
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

impl<T: AsyncWrite + Unpin> AsyncWrite for ClientDeadlines<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let step = Pin::new(&mut self.io).poll_write(cx, buf);
        self.bound_write(cx, step)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let step = Pin::new(&mut self.io).poll_flush(cx);
        self.bound_write(cx, step)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let step = Pin::new(&mut self.io).poll_write_vectored(cx, bufs);
        self.bound_write(cx, step)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }
}
