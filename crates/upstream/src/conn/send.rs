//! Writing a request on an upstream connection: the head, then the client's body as it arrives (chunked
//! when the request says so), with nginx's send timeout between two steps. Data ready at once leaves in the
//! same write as the head.

use super::{no_answer, Conn, Failed, Gap};
use crate::body::ProxyBody;
use crate::wire::WireRequest;
use bytes::BytesMut;
use http_body::Body;
use std::future::poll_fn;
use std::io::IoSlice;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::io::{AsyncWrite, AsyncWriteExt};

/// Request body data up to this size is copied behind the head so both leave in one write.
const COALESCE: usize = 16 * 1024;

impl Conn {
    /// Writes a request: its head with `host` as its `Host`, then its body, chunked when the request says
    /// so. Body data that is ready at once goes out in the same write as the head; a body-less request's
    /// head is written from its parts in one vectored write.
    ///
    /// A request with a body has nginx's send timeout: every step (a write upstream, the wait for the
    /// client's next bytes) must make progress within `send_gap` (the service's `write_timeout`), however
    /// long the whole upload takes. A body-less request is bounded by the caller's deadline (one timer).
    pub async fn write_request(
        &mut self,
        host: &[u8],
        req: &mut WireRequest,
        send_gap: std::time::Duration,
    ) -> Result<(), Failed> {
        let Some(mut body) = req.body.take() else {
            let mut slices = req.head_slices(host);
            self.write_all_vectored(&mut slices)
                .await
                .map_err(no_answer)?;
            return self.flush().await.map_err(no_answer);
        };
        let head = &mut BytesMut::new();
        req.head(host, head);
        let mut gap = Gap::new(send_gap);
        let chunked = req.chunked;
        match poll_fn(|cx| Poll::Ready(next_data_now(&mut body, cx))).await? {
            Some(data) if data.len() <= COALESCE => {
                encode_data(head, &data, chunked);
                gap.step(async { self.write_all(head).await.map_err(no_answer) })
                    .await?;
            }
            Some(data) => {
                gap.step(async { self.write_all(head).await.map_err(no_answer) })
                    .await?;
                gap.step(self.write_data(&data, chunked)).await?;
            }
            None => {
                gap.step(async { self.write_all(head).await.map_err(no_answer) })
                    .await?
            }
        }
        while let Some(data) = gap.step(next_data(&mut body)).await? {
            gap.step(self.write_data(&data, chunked)).await?;
        }
        if chunked {
            gap.step(async {
                self.write_all(sluice_h1::LAST_CHUNK)
                    .await
                    .map_err(no_answer)
            })
            .await?;
        }
        gap.step(async { self.flush().await.map_err(no_answer) })
            .await
    }

    async fn write_data(&mut self, data: &[u8], chunked: bool) -> Result<(), Failed> {
        if chunked {
            let mut framed = BytesMut::with_capacity(data.len().min(COALESCE) + 16);
            if data.len() <= COALESCE {
                encode_data(&mut framed, data, true);
                return self.write_all(&framed).await.map_err(no_answer);
            }
            sluice_h1::chunk_header(data.len(), &mut framed);
            self.write_all(&framed).await.map_err(no_answer)?;
            self.write_all(data).await.map_err(no_answer)?;
            return self.write_all(b"\r\n").await.map_err(no_answer);
        }
        self.write_all(data).await.map_err(no_answer)
    }
}

/// Appends one piece of body data, as a chunk when `chunked`.
fn encode_data(out: &mut BytesMut, data: &[u8], chunked: bool) {
    if data.is_empty() {
        return;
    }
    if chunked {
        sluice_h1::chunk_header(data.len(), out);
        out.extend_from_slice(data);
        out.extend_from_slice(b"\r\n");
    } else {
        out.extend_from_slice(data);
    }
}

/// The next data frame if one is ready now (trailers are dropped).
fn next_data_now(
    body: &mut ProxyBody,
    cx: &mut Context<'_>,
) -> Result<Option<bytes::Bytes>, Failed> {
    loop {
        match Pin::new(&mut *body).poll_frame(cx) {
            Poll::Pending | Poll::Ready(None) => return Ok(None),
            Poll::Ready(Some(Err(e))) => return Err(client_failed(&e)),
            Poll::Ready(Some(Ok(frame))) => match frame.into_data() {
                Ok(d) if !d.is_empty() => return Ok(Some(d)),
                _ => {}
            },
        }
    }
}

/// The next data frame of the client's body, waiting for it (trailers are dropped).
async fn next_data(body: &mut ProxyBody) -> Result<Option<bytes::Bytes>, Failed> {
    loop {
        let frame = poll_fn(|cx| Pin::new(&mut *body).poll_frame(cx)).await;
        match frame {
            None => return Ok(None),
            Some(Err(e)) => return Err(client_failed(&e)),
            Some(Ok(frame)) => {
                if let Ok(d) = frame.into_data() {
                    if !d.is_empty() {
                        return Ok(Some(d));
                    }
                }
            }
        }
    }
}

/// Why the client's body failed: it passed its cap, the client stalled past the body timeout, or it broke
/// off or broke its framing.
pub(crate) fn client_failed(e: &crate::body::BoxError) -> Failed {
    if e.is::<crate::body::OverLimit>() {
        Failed::OverLimit
    } else if e.is::<crate::body::TooLarge>() {
        Failed::TooLarge
    } else if crate::body::is_client_timeout(e.as_ref()) {
        Failed::ClientTimeout
    } else {
        Failed::ClientBody
    }
}

/// Writes all of `bufs`, in as few writes as `w` takes (a write may take part of them).
pub(super) async fn write_all_vectored<W: AsyncWrite + Unpin>(
    w: &mut W,
    mut bufs: &mut [IoSlice<'_>],
) -> std::io::Result<()> {
    while !bufs.is_empty() {
        let n = w.write_vectored(bufs).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::WriteZero.into());
        }
        IoSlice::advance_slices(&mut bufs, n);
    }
    Ok(())
}

#[cfg(test)]
mod tests;
