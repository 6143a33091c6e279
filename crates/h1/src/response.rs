//! Response heads: the status line and header fields parsed off the front of the read buffer, and how the
//! body that follows is delimited (RFC 9112 §6.3).
//!
//! Parsing runs in two steps. [`scan`] runs httparse over the buffer and records where each field's name and
//! value lie; then [`build`](framing::build) splits the head's bytes off the buffer, keeps the fields as
//! those bytes ([`ResponseFields`]: no header map unless someone asks for one), and reads the framing fields
//! on the way.

use std::fmt;
use std::mem::MaybeUninit;

use arrayvec::ArrayVec;
use bytes::BytesMut;
use http::{StatusCode, Version};

mod framing;
mod raw;
pub use raw::{Field, Kind, ResponseFields, HOP_BY_HOP};

#[cfg(test)]
mod tests;

/// Upper bound of a response head (status line + headers); larger → [`ParseError::TooLarge`].
pub const MAX_HEAD_BYTES: usize = 64 * 1024;

/// Header fields parsed with a stack array; a head with more is parsed again with [`MAX_HEADERS`].
const STACK_HEADERS: usize = 64;
/// Most header fields accepted in one head; more → [`ParseError::TooManyHeaders`].
const MAX_HEADERS: usize = 256;

/// How the body of a response is delimited (RFC 9112 §6.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// No body: a response to HEAD, a 1xx, 204 or 304.
    Empty,
    /// `Content-Length`: exactly this many bytes.
    Length(u64),
    /// `Transfer-Encoding` ending in `chunked`.
    Chunked,
    /// Neither (or a transfer coding other than chunked): the body runs until the server closes.
    UntilClose,
}

/// A parsed response head, with what the proxy needs to read its body and decide on connection reuse.
#[derive(Debug)]
pub struct ResponseHead {
    /// The status code; 1xx heads are returned too (the caller skips interim ones and parses again).
    pub status: StatusCode,
    /// `HTTP_10` or `HTTP_11`.
    pub version: Version,
    /// All header fields in order, as received; repeated fields stay repeated.
    pub fields: ResponseFields,
    /// How the body is delimited.
    pub framing: Framing,
    /// Whether the connection may carry another request after this response's body ends.
    pub keep_alive: bool,
}

/// Why a response head could not be parsed. The connection must not be used again after any of these.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParseError {
    /// Not a valid HTTP/1.0 or HTTP/1.1 response head (bad status line, version, field syntax, obs-fold).
    Malformed,
    /// The head is longer than [`MAX_HEAD_BYTES`].
    TooLarge,
    /// The head has more than 256 header fields.
    TooManyHeaders,
    /// `Content-Length` is not one valid decimal number (or its field lines disagree).
    BadContentLength,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ParseError::Malformed => "malformed HTTP/1 response head",
            ParseError::TooLarge => "HTTP/1 response head too large",
            ParseError::TooManyHeaders => "too many header fields in HTTP/1 response head",
            ParseError::BadContentLength => "invalid Content-Length in HTTP/1 response",
        })
    }
}

impl std::error::Error for ParseError {}

/// Where one field's name and value lie in the head (byte offsets, end exclusive), and what its name is.
#[derive(Debug, Clone, Copy)]
struct FieldSpan {
    name: (u32, u32),
    value: (u32, u32),
    kind: Kind,
}

// Offsets into the head are stored as u32.
const _: () = assert!(MAX_HEAD_BYTES <= u32::MAX as usize);

/// What [`scan`] found in a complete head.
#[derive(Debug, Clone, Copy)]
struct Scanned {
    /// Length of the head, final empty line included.
    len: usize,
    status: StatusCode,
    version: Version,
}

/// Parses one response head from the front of `buf`.
///
/// `Ok(None)`: the head is incomplete and the caller reads more (once `buf` holds [`MAX_HEAD_BYTES`] without a
/// complete head this is `Err(TooLarge)` instead). `Ok(Some(head))`: the head's bytes were split off the front of
/// `buf`, and what remains is body bytes or later data. Fields are not copied: they stay in the head's bytes.
///
/// `head_request`: the request was HEAD, so the response has no body whatever its headers say. Interim 1xx
/// responses come back like any head with [`Framing::Empty`]; the caller discards them and parses again, except a
/// 101, which ends HTTP on the connection: the answer to an upgrade it asked for, an error otherwise.
pub fn parse_response(
    buf: &mut BytesMut,
    head_request: bool,
) -> Result<Option<ResponseHead>, ParseError> {
    // Nothing read yet (an upstream connection parses before its first read): no head, at no cost.
    if buf.is_empty() {
        return Ok(None);
    }
    // Filled by `scan` from its start: an `ArrayVec` is not written before that (an array of spans was
    // zeroed, ~80 instructions per head).
    let mut spans = ArrayVec::<FieldSpan, STACK_HEADERS>::new();
    let scanned = {
        let mut raw = [MaybeUninit::uninit(); STACK_HEADERS];
        scan(buf, &mut raw, &mut spans)
    };
    let scanned = match scanned {
        Err(ParseError::TooManyHeaders) => return parse_many(buf, head_request),
        other => other?,
    };
    match scanned {
        Some(s) => framing::build(buf, s, &spans, head_request).map(Some),
        None => incomplete(buf),
    }
}

/// The slow path of [`parse_response`] for heads with more than [`STACK_HEADERS`] fields: heap arrays.
#[cold]
fn parse_many(buf: &mut BytesMut, head_request: bool) -> Result<Option<ResponseHead>, ParseError> {
    let mut spans = Vec::with_capacity(MAX_HEADERS);
    let scanned = {
        let mut raw = vec![MaybeUninit::uninit(); MAX_HEADERS];
        scan(buf, &mut raw, &mut spans)?
    };
    match scanned {
        Some(s) => framing::build(buf, s, &spans, head_request).map(Some),
        None => incomplete(buf),
    }
}

/// The answer for a head that is not complete yet: read more, unless the buffer is already at the limit.
fn incomplete(buf: &BytesMut) -> Result<Option<ResponseHead>, ParseError> {
    if buf.len() >= MAX_HEAD_BYTES {
        Err(ParseError::TooLarge)
    } else {
        Ok(None)
    }
}

/// Runs httparse over at most [`MAX_HEAD_BYTES`] of `buf` and appends each field's position to `spans`
/// (empty, with room for as many fields as `raw`). `Ok(None)`: incomplete.
fn scan<'b>(
    buf: &'b [u8],
    raw: &mut [MaybeUninit<httparse::Header<'b>>],
    spans: &mut impl Extend<FieldSpan>,
) -> Result<Option<Scanned>, ParseError> {
    let data = &buf[..buf.len().min(MAX_HEAD_BYTES)];
    let mut res = httparse::Response::new(&mut []);
    let len = match httparse::ParserConfig::default()
        .parse_response_with_uninit_headers(&mut res, data, raw)
    {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(httparse::Error::TooManyHeaders) => return Err(ParseError::TooManyHeaders),
        Err(_) => return Err(ParseError::Malformed),
    };
    let version = match res.version {
        Some(0) => Version::HTTP_10,
        Some(1) => Version::HTTP_11,
        _ => return Err(ParseError::Malformed),
    };
    let status = res
        .code
        .and_then(|c| StatusCode::from_u16(c).ok())
        .ok_or(ParseError::Malformed)?;
    let base = data.as_ptr() as usize;
    let offset = |s: &[u8]| {
        let start = (s.as_ptr() as usize - base) as u32;
        (start, start + s.len() as u32)
    };
    spans.extend(res.headers.iter().map(|h| FieldSpan {
        name: offset(h.name.as_bytes()),
        value: offset(h.value),
        kind: Kind::of(h.name.as_bytes()),
    }));
    Ok(Some(Scanned {
        len,
        status,
        version,
    }))
}
