//! Request heads, the server side of the codec: the request line and header fields parsed off the front of a
//! client connection's read buffer, and how the body that follows is delimited (RFC 9112 §6), with nginx's
//! answers to what a gateway must refuse.
//!
//! The rules a head breaks are sorted by the status a client gets ([`RequestError::status`]):
//! - 400: bad syntax (httparse's grammar: no obs-fold, no bare CR, token field names), a target `http::Uri`
//!   refuses, `Content-Length` that is not one decimal number, a repeated `Content-Length` line (even with
//!   equal values: nginx refuses it), `Content-Length` beside `Transfer-Encoding` (a smuggling attempt), and
//!   any `Transfer-Encoding` in HTTP/1.0;
//! - 501: a transfer coding other than `chunked` alone (nginx implements nothing else);
//! - by size, as nginx's `large_client_header_buffers` ([`HeadLimits`]): 414 for a request line longer than
//!   one buffer, 400 for a field line longer than one buffer or a head longer than all of them (nginx's
//!   "Request Header Or Cookie Too Large"). There is no limit on the number of fields beyond that.
//!
//! A target with bytes outside ASCII (nginx takes them raw) is kept with those bytes percent-encoded, so the
//! router sees the same bytes decoded that Kong's router sees (and answers 404 where no route takes them).

use std::mem::MaybeUninit;

use arrayvec::ArrayVec;
use bytes::{Bytes, BytesMut};
use http::header::{CONNECTION, CONTENT_LENGTH, EXPECT, TRANSFER_ENCODING, UPGRADE};
use http::{HeaderMap, HeaderName, HeaderValue, Method, Uri, Version};

use crate::fields::{self, ConnectionTokens};

#[cfg(test)]
mod tests;

/// Upper bound of [`HeadLimits::total`] (offsets in a head are kept as u32).
pub const MAX_REQUEST_HEAD: usize = 1 << 20;

/// Header fields parsed with a stack array; a head with more is parsed again with a heap array as long
/// as the head allows.
const STACK_FIELDS: usize = 64;

/// How large a request head may be: nginx's `large_client_header_buffers number size`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeadLimits {
    /// The longest request line or field line (`size`).
    pub line: usize,
    /// The longest head (`number` × `size`).
    pub total: usize,
}

impl Default for HeadLimits {
    /// nginx's default, `4 8k`.
    fn default() -> Self {
        HeadLimits {
            line: 8 * 1024,
            total: 4 * 8 * 1024,
        }
    }
}

/// How a request body is delimited (RFC 9112 §6.3: a request without framing fields has none).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestFraming {
    /// `Content-Length` (0 when absent).
    Length(u64),
    /// `Transfer-Encoding: chunked`.
    Chunked,
}

/// A parsed request head, with what the server needs to read its body and reuse the connection.
#[derive(Debug)]
pub struct RequestHead {
    pub method: Method,
    pub uri: Uri,
    /// `HTTP_10` or `HTTP_11`.
    pub version: Version,
    /// All fields in order; values share the read buffer's bytes.
    pub headers: HeaderMap,
    pub framing: RequestFraming,
    /// The client lets the connection carry another request after this one.
    pub keep_alive: bool,
    /// `Expect: 100-continue` (HTTP/1.1): the client waits for a 100 before sending the body.
    pub expect_continue: bool,
    /// An `Upgrade` field is present (the driver decides whether it is an upgrade it takes).
    pub upgrade: bool,
}

/// Why a request head is refused; the connection is closed after the answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestError {
    /// Broken syntax or a framing conflict: 400.
    Malformed,
    /// A field line or the head over [`HeadLimits`]: 400, as nginx answers.
    TooLarge,
    /// The request line over [`HeadLimits::line`]: 414.
    UriTooLong,
    /// A transfer coding other than `chunked`: 501.
    UnknownCoding,
}

impl RequestError {
    /// The status the client gets.
    pub fn status(self) -> u16 {
        match self {
            RequestError::Malformed | RequestError::TooLarge => 400,
            RequestError::UnknownCoding => 501,
            RequestError::UriTooLong => 414,
        }
    }
}

/// Parses one request head from the front of `buf`: `Ok(None)` when it is not complete yet (read more),
/// `Ok(Some(head))` with the head's bytes split off `buf` (what remains is body or a pipelined request).
pub fn parse_request(
    buf: &mut BytesMut,
    limits: HeadLimits,
) -> Result<Option<RequestHead>, RequestError> {
    // Filled by `scan` from its start: an `ArrayVec` is not written before that (an array of spans was
    // zeroed, ~80 instructions per head).
    let mut spans = ArrayVec::<Span, STACK_FIELDS>::new();
    let scanned = {
        let mut raw = [MaybeUninit::uninit(); STACK_FIELDS];
        scan(buf, limits, &mut raw, &mut spans)
    };
    match scanned {
        Err(RequestError::TooLarge) => parse_many(buf, limits),
        // httparse takes a target only as UTF-8; raw bytes beyond (nginx takes them) are encoded first.
        Err(RequestError::Malformed) if encode_request_line(buf) => parse_request(buf, limits),
        Err(e) => Err(e),
        Ok(Some(s)) => build(buf, s, &spans, limits).map(Some),
        Ok(None) => incomplete(buf, limits),
    }
}

/// The slow path for heads with more than [`STACK_FIELDS`] fields: as many as the head's size allows.
#[cold]
fn parse_many(buf: &mut BytesMut, limits: HeadLimits) -> Result<Option<RequestHead>, RequestError> {
    // A field line takes at least three bytes (`a:` and LF).
    let most = buf.len().min(limits.total) / 3 + 1;
    let mut spans = Vec::with_capacity(most);
    let scanned = {
        let mut raw = vec![MaybeUninit::uninit(); most];
        scan(buf, limits, &mut raw, &mut spans)?
    };
    match scanned {
        Some(s) => build(buf, s, &spans, limits).map(Some),
        None => incomplete(buf, limits),
    }
}

/// An incomplete head: read more, unless it is already over a limit.
fn incomplete(buf: &[u8], limits: HeadLimits) -> Result<Option<RequestHead>, RequestError> {
    let line_end = buf.iter().take(limits.line + 1).position(|&b| b == b'\n');
    if line_end.is_none() && buf.len() > limits.line {
        return Err(RequestError::UriTooLong);
    }
    if buf.len() >= limits.total {
        return Err(RequestError::TooLarge);
    }
    Ok(None)
}

/// Where the target and each field lie in the head (byte offsets, end exclusive).
#[derive(Debug, Clone, Copy)]
struct Span {
    name: (u32, u32),
    value: (u32, u32),
}

const _: () = assert!(MAX_REQUEST_HEAD <= u32::MAX as usize);

#[derive(Debug, Clone, Copy)]
struct Scanned {
    len: usize,
    version: Version,
    method: (u32, u32),
    target: (u32, u32),
}

/// httparse over at most [`HeadLimits::total`] bytes of `buf`, appending each field's position to `spans`
/// (empty). `Ok(None)`: incomplete; `Err(TooLarge)`: more fields than `raw` holds.
fn scan<'b>(
    buf: &'b [u8],
    limits: HeadLimits,
    raw: &mut [MaybeUninit<httparse::Header<'b>>],
    spans: &mut impl Extend<Span>,
) -> Result<Option<Scanned>, RequestError> {
    let data = &buf[..buf.len().min(limits.total.min(MAX_REQUEST_HEAD))];
    let mut req = httparse::Request::new(&mut []);
    let len = match httparse::ParserConfig::default()
        .parse_request_with_uninit_headers(&mut req, data, raw)
    {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(httparse::Error::TooManyHeaders) => return Err(RequestError::TooLarge),
        Err(_) => return Err(RequestError::Malformed),
    };
    let version = match req.version {
        Some(0) => Version::HTTP_10,
        _ => Version::HTTP_11,
    };
    let base = data.as_ptr() as usize;
    let offset = |s: &[u8]| {
        let start = (s.as_ptr() as usize - base) as u32;
        (start, start + s.len() as u32)
    };
    let (Some(method), Some(target)) = (req.method, req.path) else {
        return Err(RequestError::Malformed);
    };
    spans.extend(req.headers.iter().map(|h| Span {
        name: offset(h.name.as_bytes()),
        value: offset(h.value),
    }));
    Ok(Some(Scanned {
        len,
        version,
        method: offset(method.as_bytes()),
        target: offset(target.as_bytes()),
    }))
}

/// What the framing fields of a head said.
#[derive(Debug, Default)]
struct Seen {
    lengths: u32,
    length: Option<u64>,
    te: bool,
    /// Every coding listed so far, in order, is one `chunked` (and nothing else).
    te_chunked_only: bool,
    codings: u32,
    connection: ConnectionTokens,
    expect_continue: bool,
    upgrade: bool,
}

impl Seen {
    #[inline]
    fn see(&mut self, name: &HeaderName, value: &[u8]) {
        if *name == CONTENT_LENGTH {
            self.lengths += 1;
            // One decimal number: nginx refuses lists (`3, 3`) and signs.
            self.length = fields::decimal(value.trim_ascii());
        } else if *name == TRANSFER_ENCODING {
            self.te = true;
            for coding in value.split(|&b| b == b',').map(<[u8]>::trim_ascii) {
                if coding.is_empty() {
                    continue;
                }
                self.codings += 1;
                self.te_chunked_only = self.codings == 1 && coding.eq_ignore_ascii_case(b"chunked");
            }
        } else if *name == CONNECTION {
            self.connection.add(value);
        } else if *name == EXPECT {
            self.expect_continue = value.trim_ascii().eq_ignore_ascii_case(b"100-continue");
        } else if *name == UPGRADE {
            self.upgrade = true;
        }
    }
}

/// Splits the scanned head off `buf` and builds the [`RequestHead`], checking each line against the limits.
fn build(
    buf: &mut BytesMut,
    s: Scanned,
    spans: &[Span],
    limits: HeadLimits,
) -> Result<RequestHead, RequestError> {
    // The request line ends after the version: its CRLF is at most two bytes past the target's end + 9.
    if s.target.1 as usize + 11 > limits.line {
        return Err(RequestError::UriTooLong);
    }
    if spans
        .iter()
        .any(|f| (f.value.1 - f.name.0) as usize + 2 > limits.line)
    {
        return Err(RequestError::TooLarge);
    }
    let head = buf.split_to(s.len).freeze();
    let slice = |(a, b): (u32, u32)| &head[a as usize..b as usize];
    let method = Method::from_bytes(slice(s.method)).map_err(|_| RequestError::Malformed)?;
    let uri = target(&head, s.target)?;
    let mut headers = crate::spare::header_map(spans.len() + 4);
    let mut seen = Seen::default();
    for span in spans {
        let name =
            crate::names::header_name(slice(span.name)).map_err(|_| RequestError::Malformed)?;
        seen.see(&name, slice(span.value));
        let (vs, ve) = (span.value.0 as usize, span.value.1 as usize);
        let value = HeaderValue::from_maybe_shared(head.slice(vs..ve))
            .map_err(|_| RequestError::Malformed)?;
        headers.append(name, value);
    }
    let framing = framing(s.version, &seen)?;
    let keep_alive = match s.version {
        Version::HTTP_11 => !seen.connection.close,
        _ => seen.connection.keep_alive && !seen.connection.close,
    };
    Ok(RequestHead {
        method,
        uri,
        version: s.version,
        headers,
        framing,
        keep_alive,
        expect_continue: seen.expect_continue && s.version == Version::HTTP_11,
        upgrade: seen.upgrade,
    })
}

/// The body framing, with nginx's refusals (see the module doc).
fn framing(version: Version, seen: &Seen) -> Result<RequestFraming, RequestError> {
    if seen.te {
        if version == Version::HTTP_10 || seen.lengths > 0 {
            return Err(RequestError::Malformed);
        }
        return match seen.te_chunked_only && seen.codings == 1 {
            true => Ok(RequestFraming::Chunked),
            false => Err(RequestError::UnknownCoding),
        };
    }
    match (seen.lengths, seen.length) {
        (0, _) => Ok(RequestFraming::Length(0)),
        (1, Some(n)) => Ok(RequestFraming::Length(n)),
        _ => Err(RequestError::Malformed),
    }
}

/// The request target as a `Uri`, sharing the head's bytes; bytes outside ASCII are percent-encoded first
/// (`http::Uri` takes ASCII only).
fn target(head: &Bytes, (a, b): (u32, u32)) -> Result<Uri, RequestError> {
    let raw = &head[a as usize..b as usize];
    let shared = match raw.is_ascii() {
        true => head.slice(a as usize..b as usize),
        false => Bytes::from(percent_encode_high(raw)),
    };
    Uri::from_maybe_shared(shared).map_err(|_| RequestError::Malformed)
}

/// Percent-encodes the bytes outside ASCII in the request line at the front of `buf`, in place: false when
/// it has none (or is not complete), so the line stays as it was.
#[cold]
fn encode_request_line(buf: &mut BytesMut) -> bool {
    let Some(end) = buf.iter().position(|&b| b == b'\n') else {
        return false;
    };
    if buf[..end].is_ascii() {
        return false;
    }
    let mut line = BytesMut::from(&percent_encode_high(&buf[..end])[..]);
    line.extend_from_slice(&buf[end..]);
    *buf = line;
    true
}

#[cold]
fn percent_encode_high(raw: &[u8]) -> Vec<u8> {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let mut out = Vec::with_capacity(raw.len() * 3);
    for &b in raw {
        if b.is_ascii() {
            out.push(b);
        } else {
            out.extend_from_slice(&[b'%', HEX[usize::from(b >> 4)], HEX[usize::from(b & 15)]]);
        }
    }
    out
}

impl From<RequestFraming> for crate::Framing {
    fn from(f: RequestFraming) -> crate::Framing {
        match f {
            RequestFraming::Length(n) => crate::Framing::Length(n),
            RequestFraming::Chunked => crate::Framing::Chunked,
        }
    }
}
