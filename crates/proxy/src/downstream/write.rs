//! HTTP/1.1 responses on the wire: the head (status line, the fields as the driver left them, then the
//! framing and connection fields the connection decides: `Content-Length` or chunked, `Date`,
//! `Connection`), and the body written after it, coalescing what is ready into as few writes as possible.
//! A client that stops reading is cut after `send_timeout` without progress (nginx's `send_timeout`).

use super::stall::Stall;
use crate::respond::LateHeaders;
use bytes::{Buf, Bytes};
use http::header::{CONNECTION, CONTENT_LENGTH, DATE, SERVER, TRANSFER_ENCODING};
use http::{response, StatusCode};
use http_body::{Body, SizeHint};
use std::cell::RefCell;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, SystemTime};
use tokio::io::AsyncWrite;

/// Coalesced writes stop growing here (larger pieces are written as they come).
const COALESCE: usize = 16 * 1024;

/// How the body follows the head.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// No body on the wire (HEAD, 1xx, 204, 304).
    None,
    Length,
    Chunked,
    /// An HTTP/1.0 client without a length: the body ends when the connection closes.
    UntilClose,
}

/// What the head depends on besides the response.
#[derive(Debug, Clone, Copy)]
pub struct Facts {
    pub head_request: bool,
    pub http10: bool,
    /// The connection may carry another request (the client's wish and the server's state).
    pub keep_alive: bool,
}

/// Writes the response head into `out` and says how the body follows and whether the connection stays
/// open after it. `late`: Kong's and the plugins' headers not yet in the map, written after its fields (an
/// upstream field they replace is left out; the framing fields are the connection's, never theirs), and
/// the upstream's fields as received when the map does not hold them (written first).
pub fn head(
    out: &mut Vec<u8>,
    parts: &response::Parts,
    late: Option<&LateHeaders>,
    hint: &SizeHint,
    facts: Facts,
) -> (Framing, bool) {
    let status = parts.status;
    let mut keep = facts.keep_alive;
    let no_body = status.is_informational() || status == StatusCode::NO_CONTENT;
    out.extend_from_slice(b"HTTP/1.1 ");
    out.extend_from_slice(status.as_str().as_bytes());
    out.push(b' ');
    out.extend_from_slice(status.canonical_reason().unwrap_or("").as_bytes());
    out.extend_from_slice(b"\r\n");
    // One pass: the fields are written and the three the connection decides on are noted (a hashed lookup
    // each would cost more than the pass).
    let (mut has_length, mut has_date, mut has_connection) = (false, false, false);
    let mut has_server = false;
    if let Some((late, fields)) = late.and_then(|l| Some((l, l.upstream.as_ref()?))) {
        // The upstream's fields as received (the fast path made no map of them).
        let seen = super::upstream_fields::write(out, fields, late, no_body);
        (has_length, has_date, has_server) = (seen.length, seen.date, seen.server);
    }
    for (name, value) in &parts.headers {
        if *name == CONTENT_LENGTH {
            has_length = true;
            if no_body {
                continue;
            }
        } else if *name == TRANSFER_ENCODING {
            continue;
        } else if *name == DATE {
            has_date = true;
        } else if *name == CONNECTION {
            has_connection = true;
        } else if late.is_some_and(|l| l.replaces(name)) {
            continue;
        } else if *name == SERVER {
            has_server = true;
        }
        field(out, name.as_str().as_bytes(), value.as_bytes());
    }
    if let Some(late) = late {
        late.write(out, has_server);
    }
    let framing = if no_body || status == StatusCode::NOT_MODIFIED || facts.head_request {
        Framing::None
    } else if has_length || hint.exact().is_some() {
        Framing::Length
    } else if facts.http10 {
        keep = false;
        Framing::UntilClose
    } else {
        Framing::Chunked
    };
    if framing == Framing::Length && !has_length {
        let mut n = itoa::Buffer::new();
        field(
            out,
            b"content-length",
            n.format(hint.exact().unwrap_or(0)).as_bytes(),
        );
    }
    if framing == Framing::Chunked {
        field(out, b"transfer-encoding", b"chunked");
    }
    if !has_date {
        DATE_VALUE.with(|d| field(out, b"date", d.borrow_mut().now().as_bytes()));
    }
    if !has_connection {
        match (keep, facts.http10) {
            (false, _) if !status.is_informational() => field(out, b"connection", b"close"),
            (true, true) => field(out, b"connection", b"keep-alive"),
            _ => {}
        }
    }
    out.extend_from_slice(b"\r\n");
    (framing, keep)
}

fn field(out: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    out.extend_from_slice(name);
    out.extend_from_slice(b": ");
    out.extend_from_slice(value);
    out.extend_from_slice(b"\r\n");
}

thread_local! {
    /// The `Date` value, made once a second per worker.
    static DATE_VALUE: RefCell<CachedDate> = RefCell::new(CachedDate::default());
}

#[derive(Default)]
struct CachedDate {
    second: u64,
    text: String,
}

impl CachedDate {
    fn now(&mut self) -> &str {
        let now = SystemTime::now();
        let second = now
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap_or(Duration::ZERO)
            .as_secs();
        if second != self.second || self.text.is_empty() {
            self.second = second;
            self.text = httpdate::fmt_http_date(now);
        }
        &self.text
    }
}

/// A response being written: the head (already in `out`), then the body's pieces as they come. Small
/// pieces are copied behind the head and go out in one write; a large one is written from its own bytes
/// (with the head, vectored, on plain TCP).
pub struct Writer<B> {
    out: Vec<u8>,
    written: usize,
    /// A large piece, written after `out` without copying.
    large: Option<Bytes>,
    /// `large` is a chunk: its closing CRLF goes out after it.
    large_is_chunk: bool,
    body: B,
    framing: Framing,
    /// The body ended (its last piece and the chunked terminator are queued).
    ended: bool,
    /// `send_timeout` between two writes that got somewhere.
    stall: Stall,
}

/// Why a response could not be written to the end.
#[derive(Debug)]
pub enum WriteError {
    Io(io::Error),
    /// The body failed midway: the client cannot be told but by closing.
    Body,
}

impl std::fmt::Display for WriteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WriteError::Io(e) => write!(f, "writing to the client: {e}"),
            WriteError::Body => f.write_str("the response body failed"),
        }
    }
}

impl<B> Writer<B>
where
    B: Body<Data = Bytes> + Unpin,
{
    /// `send_timeout` bounds each wait for the client to take more bytes.
    pub fn new(out: Vec<u8>, body: B, framing: Framing, send_timeout: Duration) -> Writer<B> {
        let ended = framing == Framing::None;
        Writer {
            out,
            written: 0,
            large: None,
            large_is_chunk: false,
            body,
            framing,
            ended,
            stall: Stall::new(send_timeout),
        }
    }

    /// Writes until the whole response is on the wire and flushed.
    pub fn poll_write<IO: AsyncWrite + Unpin>(
        &mut self,
        cx: &mut Context<'_>,
        io: &mut IO,
    ) -> Poll<Result<(), WriteError>> {
        loop {
            // Take what the body has ready first, so the head and a small body go out in one write.
            while !self.ended && self.large.is_none() && self.out.len() < COALESCE {
                match Pin::new(&mut self.body).poll_frame(cx) {
                    Poll::Ready(frame) => self.take(frame)?,
                    Poll::Pending => break,
                }
            }
            if self.written < self.out.len() || self.large.is_some() {
                match self.poll_send(cx, io) {
                    Poll::Ready(sent) => sent?,
                    Poll::Pending => return self.poll_stalled(cx),
                }
                continue;
            }
            match Pin::new(&mut *io).poll_flush(cx) {
                Poll::Ready(flushed) => flushed.map_err(WriteError::Io)?,
                Poll::Pending => return self.poll_stalled(cx),
            }
            // Everything so far is out; unless it ended, the body's last poll was Pending (its waker is set).
            return match self.ended {
                true => Poll::Ready(Ok(())),
                false => Poll::Pending,
            };
        }
    }

    /// The client takes no more bytes for now: Pending while within `send_timeout`, then the error that
    /// closes the connection (the response's body, and with it the upstream connection, is dropped).
    fn poll_stalled(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), WriteError>> {
        std::task::ready!(self.stall.poll_expired(cx));
        Poll::Ready(Err(WriteError::Io(io::Error::new(
            io::ErrorKind::TimedOut,
            "the client read nothing within send_timeout",
        ))))
    }

    /// Writes what is queued: `out`, then the large piece.
    fn poll_send<IO: AsyncWrite + Unpin>(
        &mut self,
        cx: &mut Context<'_>,
        io: &mut IO,
    ) -> Poll<Result<(), WriteError>> {
        loop {
            let copied = &self.out[self.written..];
            let large = self.large.as_deref().unwrap_or_default();
            if copied.is_empty() && large.is_empty() {
                self.out.clear();
                self.written = 0;
                self.large = None;
                if std::mem::take(&mut self.large_is_chunk) {
                    self.out.extend_from_slice(b"\r\n");
                    continue;
                }
                return Poll::Ready(Ok(()));
            }
            let io = Pin::new(&mut *io);
            let n = if !copied.is_empty() && !large.is_empty() && io.is_write_vectored() {
                let slices = [io::IoSlice::new(copied), io::IoSlice::new(large)];
                std::task::ready!(io.poll_write_vectored(cx, &slices))
            } else if !copied.is_empty() {
                std::task::ready!(io.poll_write(cx, copied))
            } else {
                std::task::ready!(io.poll_write(cx, large))
            }
            .map_err(WriteError::Io)?;
            if n == 0 {
                return Poll::Ready(Err(WriteError::Io(io::ErrorKind::WriteZero.into())));
            }
            self.stall.progressed();
            let from_copied = n.min(copied.len());
            self.written += from_copied;
            if let Some(large) = self.large.as_mut() {
                large.advance(n - from_copied);
            }
        }
    }

    /// Puts one of the body's frames (or its end) in the queue.
    fn take(
        &mut self,
        frame: Option<Result<http_body::Frame<Bytes>, B::Error>>,
    ) -> Result<(), WriteError> {
        match frame {
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    self.piece(data);
                }
            }
            Some(Err(_)) => return Err(WriteError::Body),
            None => {
                if self.framing == Framing::Chunked {
                    self.out.extend_from_slice(sluice_h1::LAST_CHUNK);
                }
                self.ended = true;
            }
        }
        Ok(())
    }

    fn piece(&mut self, data: Bytes) {
        if data.is_empty() || self.framing == Framing::None {
            return;
        }
        let chunked = self.framing == Framing::Chunked;
        if chunked {
            sluice_h1::chunk_header(data.len(), &mut self.out);
        }
        if data.len() >= COALESCE {
            self.large = Some(data);
            self.large_is_chunk = chunked;
            return;
        }
        self.out.extend_from_slice(&data);
        if chunked {
            self.out.extend_from_slice(b"\r\n");
        }
    }
}

#[cfg(test)]
mod tests;
