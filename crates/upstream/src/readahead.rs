//! Response buffering, as Kong's route field `response_buffering` (default on) asks of nginx
//! (`proxy_buffering on`): the upstream's body is read as fast as the upstream sends it, whatever the
//! client's pace, so the upstream connection is free for its next request once it has sent the response,
//! and a slow client holds memory and disk, never an upstream connection.
//!
//! What is read ahead is held in memory up to nginx's `proxy_buffers` (8 × 4k), then in an unnamed temporary
//! file under the prefix's `proxy_temp`, up to `proxy_max_temp_file_size` (1024m; 0: no file). Past both
//! the upstream waits for the client, as in nginx. The client gets every byte as soon as it can take it:
//! buffering never delays data that the client is ready for.
//!
//! A task of its own (the pump) reads the upstream body; the client's body ([`ReadAhead`]) takes what it
//! read, in order: memory first, then the file (the pump writes to the file only while the file holds
//! unread data or memory is full, so memory never holds newer data than the file). A response whose body
//! is already whole in the connection's buffer when its head is read (the usual small response) needs no
//! pump ([`UpstreamBody::new`]), and neither does one the upstream marks `X-Accel-Buffering: no`.
//!
//! The file is written and read with positioned, blocking calls on the worker's thread, as nginx does
//! without `aio`: pieces of at most 64 KiB, into the page cache.

use crate::body::{box_err, BoxError};
use crate::pooled::PooledBody;
use crate::spool::{unnamed_file_in, FILE_PIECE};
use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use sluice_h1::ResponseFields;
use std::collections::VecDeque;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

/// How response bodies are read ahead (node settings, one copy per process).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResponseBuffering {
    /// Where what memory cannot hold goes (the prefix's `proxy_temp`).
    pub temp_dir: PathBuf,
    /// The most of one body held in memory (`proxy_buffers`: number × size).
    pub memory: usize,
    /// The most of one body held in its file (`proxy_max_temp_file_size`); 0: no file.
    pub file_max: u64,
}

impl Default for ResponseBuffering {
    /// nginx's defaults on x86-64, with the system's temporary directory (the node passes its prefix's).
    fn default() -> Self {
        ResponseBuffering {
            temp_dir: std::env::temp_dir(),
            memory: 8 * 4096,
            file_max: 1024 * 1024 * 1024,
        }
    }
}

/// The upstream's response body as the proxy hands it on.
pub enum UpstreamBody {
    /// Read from the connection as the client takes it (streaming, or already whole in the buffer).
    Direct(PooledBody),
    /// Read ahead of the client by a pump task.
    Ahead(ReadAhead),
}

impl UpstreamBody {
    /// `body`, read ahead when `buffering` is given (the route buffers responses), the body is not already
    /// whole, and the upstream did not ask for streaming (`X-Accel-Buffering: no`, read from `fields`).
    #[inline]
    pub fn new(
        body: PooledBody,
        buffering: Option<&ResponseBuffering>,
        fields: &ResponseFields,
    ) -> UpstreamBody {
        match buffering {
            Some(b) if !body.is_whole() && !streaming_asked(fields) => {
                UpstreamBody::Ahead(ReadAhead::spawn(body, b))
            }
            _ => UpstreamBody::Direct(body),
        }
    }
}

/// nginx's `X-Accel-Buffering: no`: the upstream asks that this response not be buffered.
fn streaming_asked(fields: &ResponseFields) -> bool {
    fields
        .get("x-accel-buffering")
        .is_some_and(|v| v.eq_ignore_ascii_case(b"no"))
}

impl Body for UpstreamBody {
    type Data = Bytes;
    type Error = BoxError;

    #[inline]
    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        match self.get_mut() {
            UpstreamBody::Direct(b) => Pin::new(b).poll_frame(cx),
            UpstreamBody::Ahead(b) => Pin::new(b).poll_frame(cx),
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            UpstreamBody::Direct(b) => b.is_end_stream(),
            UpstreamBody::Ahead(b) => b.is_end_stream(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            UpstreamBody::Direct(b) => b.size_hint(),
            UpstreamBody::Ahead(b) => b.size_hint(),
        }
    }
}

/// What the pump and the client's body share.
#[derive(Default)]
struct State {
    memory: VecDeque<Bytes>,
    in_memory: usize,
    /// The temporary file, made when memory first overflows.
    file: Option<Arc<File>>,
    /// The file's unread data is `read_at..written`.
    read_at: u64,
    written: u64,
    /// The pump is writing at `written` (the reader must not rewind the file meanwhile).
    writing: bool,
    /// The upstream body ended (with `error` when it failed).
    ended: bool,
    error: Option<BoxError>,
    reader_gone: bool,
    reader: Option<Waker>,
    pump: Option<Waker>,
}

struct Shared(Mutex<State>);

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding this lock leaves plain data behind: keep going with it.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl State {
    fn wake_reader(&mut self) {
        if let Some(w) = self.reader.take() {
            w.wake();
        }
    }

    fn wake_pump(&mut self) {
        if let Some(w) = self.pump.take() {
            w.wake();
        }
    }

    fn in_file(&self) -> u64 {
        self.written - self.read_at
    }
}

/// The client's side of a read-ahead body.
pub struct ReadAhead {
    shared: Arc<Shared>,
    /// What is left to deliver, when the upstream said (`Content-Length`).
    left: Option<u64>,
}

impl ReadAhead {
    /// Starts the pump on `body` (in a task of the current runtime) and returns the client's side.
    pub fn spawn<B>(body: B, b: &ResponseBuffering) -> ReadAhead
    where
        B: Body<Data = Bytes, Error = BoxError> + Send + Unpin + 'static,
    {
        let shared = Arc::new(Shared(Mutex::new(State::default())));
        let left = body.size_hint().exact();
        tokio::spawn(pump(body, shared.clone(), b.clone()));
        ReadAhead { shared, left }
    }
}

/// Reads the upstream body into the shared state while there is room, until it ends or the client's
/// body is dropped.
async fn pump<B>(mut body: B, shared: Arc<Shared>, b: ResponseBuffering)
where
    B: Body<Data = Bytes, Error = BoxError> + Unpin,
{
    let mut file_failed = false;
    loop {
        let polled = std::future::poll_fn(|cx| {
            let mut s = shared.lock();
            if s.reader_gone {
                return Poll::Ready(None);
            }
            let file_room = !file_failed && b.file_max > 0 && s.in_file() < b.file_max;
            if s.in_memory >= b.memory && !file_room {
                s.pump = Some(cx.waker().clone());
                return Poll::Pending;
            }
            // Registered before polling the upstream: a client that leaves wakes the pump either way.
            s.pump = Some(cx.waker().clone());
            drop(s);
            Pin::new(&mut body).poll_frame(cx).map(Some)
        })
        .await;
        let frame = match polled {
            None => return, // the client left: the upstream connection is closed, not pooled
            Some(f) => f,
        };
        let data = match frame {
            None => return end(&shared, None),
            Some(Err(e)) => return end(&shared, Some(e)),
            Some(Ok(frame)) => match frame.into_data() {
                Ok(d) if !d.is_empty() => d,
                _ => continue,
            },
        };
        let mut s = shared.lock();
        let to_memory = s.in_file() == 0 && !s.writing && (s.in_memory < b.memory || file_failed);
        let file = match (to_memory, &s.file) {
            (true, _) => None,
            (false, Some(f)) => Some(f.clone()),
            (false, None) => match unnamed_file_in(&b.temp_dir) {
                Ok(f) => Some(s.file.insert(Arc::new(f)).clone()),
                Err(e) => {
                    tracing::error!(error = %e, dir = %b.temp_dir.display(), "cannot buffer a response in a temporary file");
                    file_failed = true;
                    None
                }
            },
        };
        let Some(file) = file else {
            // Memory: under `proxy_buffers`, or past it when no file can be made (the upstream then waits
            // for the client).
            s.in_memory += data.len();
            s.memory.push_back(data);
            s.wake_reader();
            continue;
        };
        let at = s.written;
        s.writing = true;
        drop(s);
        let wrote = file.write_all_at(&data, at);
        let mut s = shared.lock();
        s.writing = false;
        match wrote {
            Ok(()) => s.written += data.len() as u64,
            Err(e) => {
                s.ended = true;
                s.error = Some(box_err(e));
                s.wake_reader();
                return;
            }
        }
        s.wake_reader();
    }
}

fn end(shared: &Shared, error: Option<BoxError>) {
    let mut s = shared.lock();
    s.ended = true;
    s.error = error;
    s.wake_reader();
}

impl Body for ReadAhead {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = self.get_mut();
        let mut s = this.shared.lock();
        let data = if let Some(d) = s.memory.pop_front() {
            s.in_memory -= d.len();
            d
        } else if s.in_file() > 0 {
            let (file, at) = (s.file.clone(), s.read_at);
            let n = s.in_file().min(FILE_PIECE) as usize;
            drop(s);
            let mut piece = vec![0u8; n];
            let Some(file) = file else {
                return Poll::Ready(Some(Err(box_err(std::io::Error::other("no file")))));
            };
            if let Err(e) = file.read_exact_at(&mut piece, at) {
                return Poll::Ready(Some(Err(box_err(e))));
            }
            s = this.shared.lock();
            s.read_at += n as u64;
            if s.in_file() == 0 && !s.writing {
                // All read: the file is written from its start again.
                (s.read_at, s.written) = (0, 0);
            }
            Bytes::from(piece)
        } else if s.ended {
            return Poll::Ready(s.error.take().map(Err));
        } else {
            s.reader = Some(cx.waker().clone());
            return Poll::Pending;
        };
        s.wake_pump();
        drop(s);
        if let Some(left) = this.left.as_mut() {
            *left = left.saturating_sub(data.len() as u64);
        }
        Poll::Ready(Some(Ok(Frame::data(data))))
    }

    fn is_end_stream(&self) -> bool {
        if self.left == Some(0) {
            return true;
        }
        let s = self.shared.lock();
        s.ended && s.error.is_none() && s.memory.is_empty() && s.in_file() == 0
    }

    fn size_hint(&self) -> SizeHint {
        match self.left {
            Some(n) => SizeHint::with_exact(n),
            None => SizeHint::default(),
        }
    }
}

impl Drop for ReadAhead {
    fn drop(&mut self) {
        let mut s = self.shared.lock();
        s.reader_gone = true;
        s.wake_pump();
    }
}

#[cfg(test)]
mod tests;
