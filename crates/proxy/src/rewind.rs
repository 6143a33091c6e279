//! A client connection with bytes already read from it put back in front. Two kinds of reader take the
//! connection over after reading ahead: an L4 stream route (the ClientHello read to route it is read again by
//! the TLS acceptor, or sent on to the target), and an HTTP/1.1 connection that leaves HTTP (an h2c preface,
//! or a 101 for a WebSocket tunnel: what was read past the head goes first).

use bytes::{Buf, Bytes};
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// `ahead` is let go of once it is read (or from the start when empty): it is usually a slice of the
/// connection's read buffer, and holding an empty slice would keep that whole buffer for the life of a
/// WebSocket tunnel.
pub struct Rewind<S> {
    ahead: Bytes,
    inner: S,
}

impl<S> Rewind<S> {
    pub fn new(ahead: impl Into<Bytes>, inner: S) -> Rewind<S> {
        let ahead = ahead.into();
        Rewind {
            ahead: if ahead.is_empty() {
                Bytes::new()
            } else {
                ahead
            },
            inner,
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Rewind<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        out: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if !self.ahead.is_empty() {
            let n = self.ahead.len().min(out.remaining());
            out.put_slice(&self.ahead[..n]);
            self.ahead.advance(n);
            if self.ahead.is_empty() {
                self.ahead = Bytes::new();
            }
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.inner).poll_read(cx, out)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Rewind<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, data)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::BytesMut;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test]
    async fn the_read_buffer_is_let_go_of_once_what_was_ahead_is_read() {
        let mut buf = BytesMut::with_capacity(4096);
        buf.extend_from_slice(b"ahead");
        let ahead = buf.split().freeze();
        // The rest of the connection's buffer, sharing its memory with `ahead`.
        let rest = buf.freeze();
        assert!(!rest.is_unique());
        let (inner, mut peer) = tokio::io::duplex(64);
        let mut rewound = Rewind::new(ahead, inner);
        peer.write_all(b" then").await.unwrap();
        let mut got = [0; 10];
        rewound.read_exact(&mut got).await.unwrap();
        assert_eq!(&got, b"ahead then");
        assert!(rest.is_unique(), "the tunnel still holds the read buffer");
    }
}
