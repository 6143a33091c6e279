//! The vectored head write: every byte of every slice arrives, in order, whatever each write takes.

use super::write_all_vectored;
use std::io::IoSlice;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::io::AsyncWrite;

/// A writer that takes at most `step` bytes per write, cutting across slices, like a full socket buffer.
struct Trickle {
    step: usize,
    got: Vec<u8>,
    writes: usize,
}

impl AsyncWrite for Trickle {
    fn poll_write(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        b: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        let n = b.len().min(this.step);
        this.got.extend_from_slice(&b[..n]);
        this.writes += 1;
        Poll::Ready(Ok(n))
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        let mut left = this.step;
        for b in bufs {
            let n = b.len().min(left);
            this.got.extend_from_slice(&b[..n]);
            left -= n;
            if left == 0 {
                break;
            }
        }
        this.writes += 1;
        Poll::Ready(Ok(this.step - left))
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[tokio::test]
async fn a_head_written_in_parts_arrives_whole() {
    let parts: [&[u8]; 6] = [
        b"GET / HTTP/1.1\r\n",
        b"host: ",
        b"up",
        b"\r\n",
        b"a: 1\r\n",
        b"\r\n",
    ];
    let whole: Vec<u8> = parts.concat();
    for step in [1, 3, 7, whole.len()] {
        let mut w = Trickle {
            step,
            got: Vec::new(),
            writes: 0,
        };
        let mut slices = parts.map(IoSlice::new);
        write_all_vectored(&mut w, &mut slices).await.unwrap();
        assert_eq!(w.got, whole, "step {step}");
        assert_eq!(w.writes, whole.len().div_ceil(step), "step {step}");
    }
}
