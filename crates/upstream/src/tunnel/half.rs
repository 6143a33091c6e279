//! One direction of a tunnel: bytes read from one side are written straight on to the other, through a
//! scratch buffer on the stack. A direction holds heap memory only while a write is partial: the bytes the
//! other side did not take yet, freed once written. An idle tunnel (the usual WebSocket, waiting between
//! messages) thus holds no buffer, where nginx holds its `proxy_buffer_size` and a fixed buffer per
//! direction would cost 32 KiB per tunnel.

use std::io;
use std::mem::MaybeUninit;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Instant;

/// The most one read takes (the scratch buffer on the stack, and so the most a direction keeps back).
const READ: usize = 16 * 1024;

/// Read-write rounds of one direction per poll before it yields to the rest of the worker.
const ROUNDS: usize = 16;

/// One direction: what was read and not yet written on.
pub(super) struct Half {
    /// Read and not yet taken by the other side (from `pos`); empty, and unallocated, between messages.
    left: Vec<u8>,
    pos: usize,
    /// Written since the last flush.
    dirty: bool,
    eof: bool,
    pub(super) moved: u64,
    /// Since when the pending write has made no progress.
    stalled: Option<Instant>,
}

/// What one direction did in one poll (the default: it was not pumped, nothing moved).
#[derive(Default)]
pub(super) struct Pumped {
    pub(super) progressed: bool,
    /// A write (or flush) is waiting on the other side.
    pub(super) blocked: bool,
    /// The reading side ended and everything was written on.
    pub(super) done: bool,
}

/// How a write of what is pending went.
enum Wrote {
    All,
    /// The other side took only part (or nothing): wait for it.
    Blocked,
}

impl Half {
    /// A direction starting with `pending`, bytes already read (behind the upstream's 101 head).
    pub(super) fn new(pending: &[u8]) -> Half {
        Half {
            left: pending.to_vec(),
            pos: 0,
            dirty: false,
            eof: false,
            moved: pending.len() as u64,
            stalled: None,
        }
    }

    /// Writes `bytes` on to `to` until it is all taken or `to` has to wait; what it did not take is kept
    /// in `left` (copied there unless it is `left` already). Says whether any byte went.
    fn write_on<W: AsyncWrite + Unpin>(
        &mut self,
        cx: &mut Context<'_>,
        to: &mut W,
        bytes: Option<&[u8]>,
    ) -> io::Result<(Wrote, bool)> {
        let mut progressed = false;
        let mut at = 0;
        loop {
            let rest = match bytes {
                Some(b) => &b[at..],
                None => &self.left[self.pos..],
            };
            if rest.is_empty() {
                if bytes.is_none() {
                    // Everything kept back went: give the memory back.
                    (self.left, self.pos) = (Vec::new(), 0);
                }
                return Ok((Wrote::All, progressed));
            }
            match Pin::new(&mut *to).poll_write(cx, rest) {
                Poll::Ready(Ok(0)) => return Err(io::ErrorKind::WriteZero.into()),
                Poll::Ready(Ok(n)) => {
                    match bytes {
                        Some(_) => at += n,
                        None => self.pos += n,
                    }
                    self.dirty = true;
                    progressed = true;
                }
                Poll::Ready(Err(e)) => return Err(e),
                Poll::Pending => {
                    if let Some(b) = bytes {
                        self.left.extend_from_slice(&b[at..]);
                    }
                    return Ok((Wrote::Blocked, progressed));
                }
            }
        }
    }

    /// Writes what is kept back, then reads more and writes it straight on, until either side has to
    /// wait (or for [`ROUNDS`]).
    pub(super) fn pump<R, W>(
        &mut self,
        cx: &mut Context<'_>,
        from: &mut R,
        to: &mut W,
    ) -> io::Result<Pumped>
    where
        R: AsyncRead + Unpin,
        W: AsyncWrite + Unpin,
    {
        let waiting = |progressed, blocked| {
            Ok(Pumped {
                progressed,
                blocked,
                done: false,
            })
        };
        let (wrote, mut progressed) = self.write_on(cx, to, None)?;
        if let Wrote::Blocked = wrote {
            return waiting(progressed, true);
        }
        let mut scratch = [MaybeUninit::<u8>::uninit(); READ];
        for _ in 0..ROUNDS {
            if self.dirty {
                match Pin::new(&mut *to).poll_flush(cx) {
                    Poll::Ready(Ok(())) => self.dirty = false,
                    Poll::Ready(Err(e)) => return Err(e),
                    Poll::Pending => return waiting(progressed, true),
                }
            }
            if self.eof {
                return Ok(Pumped {
                    progressed,
                    blocked: false,
                    done: true,
                });
            }
            let mut read = ReadBuf::uninit(&mut scratch);
            match Pin::new(&mut *from).poll_read(cx, &mut read) {
                Poll::Ready(Ok(())) => {
                    let n = read.filled().len();
                    self.moved += n as u64;
                    self.eof = n == 0;
                    progressed = true;
                }
                Poll::Ready(Err(e)) => return Err(e),
                Poll::Pending => return waiting(progressed, false),
            }
            if let (Wrote::Blocked, _) = self.write_on(cx, to, Some(read.filled()))? {
                return waiting(progressed, true);
            }
        }
        // Still going: let the other tasks of the worker run, then carry on.
        cx.waker().wake_by_ref();
        waiting(progressed, false)
    }

    /// Notes when a blocked write started waiting; a write that progressed starts its wait again.
    pub(super) fn note_stall(&mut self, p: &Pumped, now: Instant) -> Option<Instant> {
        self.stalled = match (p.blocked, p.progressed) {
            (false, _) => None,
            (true, true) => Some(now),
            (true, false) => Some(self.stalled.unwrap_or(now)),
        };
        self.stalled
    }

    /// Bytes held on the heap, kept back from a partial write (for tests).
    #[cfg(test)]
    pub(super) fn held(&self) -> usize {
        self.left.capacity()
    }
}
