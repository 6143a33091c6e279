//! Request buffering, as Kong's route field `request_buffering` (default on) asks of nginx
//! (`proxy_request_buffering on`): the client's whole body is read before an upstream is chosen, so a
//! slow upload costs the upstream nothing, and a body that fails (a stalled client, broken framing, over
//! the size limit) is answered without an upstream having been bothered.
//!
//! The body is held in memory up to `client_body_buffer_size` (Kong: `nginx_http_client_body_buffer_size`,
//! 8k); a larger one goes to an unnamed temporary file under the prefix's `client_body_temp` (nginx's
//! place for it; the file has no name, so nothing is left behind whatever happens to the process). The
//! result ([`SpooledBody`]) knows its length, so the upstream request says `Content-Length` where the
//! client sent chunked, as nginx does.
//!
//! `client_max_body_size` (Kong: `nginx_http_client_max_body_size`, 0 = no limit) holds whether or not the
//! route buffers: a declared length over it is refused before a byte is read ([`over_declared_limit`]),
//! a chunked body when it passes it.

use crate::body::{box_err, BoxError, ProxyBody};
use crate::conn::{client_failed, Failed};
use crate::wire::WireRequest;
use bytes::{Bytes, BytesMut};
use http_body::{Body, Frame, SizeHint};
use http_body_util::BodyExt;
use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncSeekExt, AsyncWriteExt, ReadBuf};

/// How request bodies are buffered (node settings, one copy per process).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BodyBuffering {
    /// Where bodies too large for memory go (the prefix's `client_body_temp`).
    pub temp_dir: PathBuf,
    /// The most of one body held in memory (`client_body_buffer_size`).
    pub memory: usize,
    /// The largest body accepted (`client_max_body_size`); 0: any.
    pub max_body: u64,
}

impl Default for BodyBuffering {
    /// nginx's and Kong's defaults, with the system's temporary directory (the node passes its prefix's).
    fn default() -> Self {
        BodyBuffering {
            temp_dir: std::env::temp_dir(),
            memory: 8 * 1024,
            max_body: 0,
        }
    }
}

/// Why a body could not be buffered.
#[derive(Debug)]
pub enum SpoolError {
    /// The client's body failed: a timeout, broken framing, a plugin's cap (as the upstream writer
    /// would have said, had it been streaming the body).
    Body(Failed),
    /// The body is larger than `client_max_body_size` (413).
    TooLarge,
    /// The temporary file could not be made or written (500, as nginx answers).
    File(std::io::Error),
}

/// Whether a body's declared length is over the limit (refused before reading it; nginx checks
/// `Content-Length` the same way).
pub fn over_declared_limit(body: &ProxyBody, max_body: u64) -> bool {
    max_body != 0 && body.size_hint().exact().is_some_and(|n| n > max_body)
}

/// Reads `body` to its end: in memory while it fits `b.memory`, else in a temporary file.
pub async fn read_whole(mut body: ProxyBody, b: &BodyBuffering) -> Result<SpooledBody, SpoolError> {
    if over_declared_limit(&body, b.max_body) {
        return Err(SpoolError::TooLarge);
    }
    let mut held: VecDeque<Bytes> = VecDeque::new();
    let (mut in_memory, mut len) = (0usize, 0u64);
    let mut file: Option<tokio::fs::File> = None;
    while let Some(frame) = body.frame().await {
        let Ok(data) = frame
            .map_err(|e| SpoolError::Body(client_failed(&e)))?
            .into_data()
        else {
            continue; // trailers: nginx does not forward a request's trailers either
        };
        len += data.len() as u64;
        if b.max_body != 0 && len > b.max_body {
            return Err(SpoolError::TooLarge);
        }
        in_memory += data.len();
        held.push_back(data);
        if in_memory > b.memory {
            let f = match &mut file {
                Some(f) => f,
                None => file.insert(temp_file(b)?),
            };
            for piece in held.drain(..) {
                f.write_all(&piece).await.map_err(SpoolError::File)?;
            }
            in_memory = 0;
        }
    }
    let Some(mut f) = file else {
        return Ok(SpooledBody::Memory { held, len });
    };
    for piece in held.drain(..) {
        f.write_all(&piece).await.map_err(SpoolError::File)?;
    }
    f.flush().await.map_err(SpoolError::File)?;
    f.seek(std::io::SeekFrom::Start(0))
        .await
        .map_err(SpoolError::File)?;
    Ok(SpooledBody::File { file: f, left: len })
}

/// Request buffering for one upstream request: its body, if it has one, read whole, and the request
/// given the body's length.
pub async fn buffer_request(req: &mut WireRequest, b: &BodyBuffering) -> Result<(), SpoolError> {
    let Some(body) = req.body.take() else {
        return Ok(());
    };
    let spooled = read_whole(body, b).await?;
    req.set_length(spooled.len());
    req.body = Some(spooled.boxed());
    Ok(())
}

/// An unnamed file in `dir` (made first if it is missing): nothing is left behind, whatever happens to the
/// process. Request buffering and response read-ahead ([`crate::readahead`]) both keep what memory
/// cannot hold in one.
pub(crate) fn unnamed_file_in(dir: &Path) -> std::io::Result<std::fs::File> {
    tempfile::tempfile_in(dir).or_else(|_| {
        std::fs::create_dir_all(dir)?;
        tempfile::tempfile_in(dir)
    })
}

/// A body's temporary file, for the async writes of [`read_whole`].
fn temp_file(b: &BodyBuffering) -> Result<tokio::fs::File, SpoolError> {
    unnamed_file_in(&b.temp_dir)
        .map(tokio::fs::File::from_std)
        .map_err(SpoolError::File)
}

/// A request body read whole, sent on from memory or from its file.
pub enum SpooledBody {
    Memory { held: VecDeque<Bytes>, len: u64 },
    File { file: tokio::fs::File, left: u64 },
}

/// A buffered body's file is read back in pieces of at most this size (here and in [`crate::readahead`]).
pub(crate) const FILE_PIECE: u64 = 64 * 1024;

impl SpooledBody {
    /// The body's length.
    pub fn len(&self) -> u64 {
        match self {
            SpooledBody::Memory { len, .. } => *len,
            SpooledBody::File { left, .. } => *left,
        }
    }

    /// Whether the body is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// As the boxed body type.
    pub fn boxed(self) -> ProxyBody {
        BodyExt::boxed(self)
    }
}

impl Body for SpooledBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        match self.get_mut() {
            SpooledBody::Memory { held, len } => {
                let piece = held.pop_front();
                *len -= piece.as_ref().map_or(0, |p| p.len() as u64);
                Poll::Ready(piece.map(|p| Ok(Frame::data(p))))
            }
            SpooledBody::File { left: 0, .. } => Poll::Ready(None),
            SpooledBody::File { file, left } => {
                let mut piece = BytesMut::zeroed((*left).min(FILE_PIECE) as usize);
                let mut buf = ReadBuf::new(&mut piece);
                if let Err(e) = std::task::ready!(Pin::new(file).poll_read(cx, &mut buf)) {
                    return Poll::Ready(Some(Err(box_err(e))));
                }
                let n = buf.filled().len();
                if n == 0 {
                    let short = std::io::Error::from(std::io::ErrorKind::UnexpectedEof);
                    return Poll::Ready(Some(Err(box_err(short))));
                }
                piece.truncate(n);
                *left -= n as u64;
                Poll::Ready(Some(Ok(Frame::data(piece.freeze()))))
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.is_empty()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.len())
    }
}

#[cfg(test)]
mod tests;
