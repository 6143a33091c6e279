//! A connection handed over after a `101 Switching Protocols`: the socket and the bytes already read past
//! the request head, replayed before the socket's own ([`Rewind`]). The upgrade driver takes it from the
//! request's extensions ([`OwnUpgrade`]); the connection task sends it once the 101 is written.

use bytes::{Buf, Bytes};
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::oneshot;

/// Any client transport, boxed once it leaves HTTP.
pub trait Io: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}

/// The upgraded connection: its socket, with the bytes read ahead first.
pub struct Rewind {
    pub ahead: Bytes,
    pub io: Box<dyn Io>,
}

impl Rewind {
    /// A connection with nothing read ahead.
    pub fn plain(io: impl Io + 'static) -> Rewind {
        Rewind {
            ahead: Bytes::new(),
            io: Box::new(io),
        }
    }
}

/// In a request's extensions when its head had `Upgrade`: where the connection arrives after a 101.
/// (Extensions must be `Clone`; only one taker ever gets the receiver.)
#[derive(Clone)]
pub struct OwnUpgrade(Arc<Mutex<Option<oneshot::Receiver<Rewind>>>>);

impl OwnUpgrade {
    pub fn pair() -> (OwnUpgrade, oneshot::Sender<Rewind>) {
        let (tx, rx) = oneshot::channel();
        (OwnUpgrade(Arc::new(Mutex::new(Some(rx)))), tx)
    }

    /// The receiver, for the one who takes the upgrade.
    pub fn take(&self) -> Option<oneshot::Receiver<Rewind>> {
        self.0.lock().ok()?.take()
    }
}

impl AsyncRead for Rewind {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        out: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if !self.ahead.is_empty() {
            let n = self.ahead.len().min(out.remaining());
            out.put_slice(&self.ahead[..n]);
            self.ahead.advance(n);
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.io).poll_read(cx, out)
    }
}

impl AsyncWrite for Rewind {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, data)
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
