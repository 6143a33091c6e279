//! Response bodies: a [`BodyDecoder`] takes body bytes off the front of the connection's read buffer as they
//! arrive, for each [`Framing`], without copying them.

use std::fmt;

use bytes::{Bytes, BytesMut};

use crate::Framing;

mod chunked;
#[cfg(test)]
mod tests;

/// Incrementally takes a response body out of a connection's read buffer.
///
/// Build one per response from [`ResponseHead::framing`](crate::ResponseHead::framing), call
/// [`decode`](BodyDecoder::decode) after each read, and [`eof`](BodyDecoder::eof) when the connection closes.
#[derive(Debug)]
pub struct BodyDecoder {
    state: State,
}

#[derive(Debug)]
enum State {
    /// Bytes still expected; 0 means done (also used for [`Framing::Empty`]).
    Length(u64),
    Chunked(chunked::Chunked),
    UntilClose,
    /// An until-close body that reached EOF.
    Closed,
}

/// One step of body decoding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decoded {
    /// The next piece of the body (never empty).
    Data(Bytes),
    /// The buffer holds no usable byte: read more from the connection.
    NeedMore,
    /// The body has ended; whatever is left in the buffer is not part of it.
    Done,
}

/// Why a response body could not be read. The connection must not be used again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BodyError {
    /// Invalid chunked framing (bad size line, missing CRLF after data, bad trailer, limits exceeded).
    BadChunk,
    /// EOF before the framing said the body ended.
    ClosedEarly,
}

impl fmt::Display for BodyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BodyError::BadChunk => "invalid chunked encoding in HTTP/1 response body",
            BodyError::ClosedEarly => "connection closed before the HTTP/1 response body ended",
        })
    }
}

impl std::error::Error for BodyError {}

impl BodyDecoder {
    /// A decoder for a body framed as `framing`.
    pub fn new(framing: Framing) -> Self {
        let state = match framing {
            Framing::Empty => State::Length(0),
            Framing::Length(n) => State::Length(n),
            Framing::Chunked => State::Chunked(chunked::Chunked::new()),
            Framing::UntilClose => State::UntilClose,
        };
        BodyDecoder { state }
    }

    /// Takes the next piece of body from the front of `buf`; consumed bytes are removed from `buf`, and data is
    /// split off without copying.
    ///
    /// Returns [`Decoded::Data`] as soon as any body bytes are available (part of a chunk if that is all there
    /// is), [`Decoded::NeedMore`] when `buf` has no usable byte, and [`Decoded::Done`] once the body has ended
    /// (at once for an empty body). Bytes after the body's end stay in `buf`: the caller checks
    /// `buf.is_empty()` after `Done` before reusing the connection.
    pub fn decode(&mut self, buf: &mut BytesMut) -> Result<Decoded, BodyError> {
        match &mut self.state {
            State::Length(0) | State::Closed => Ok(Decoded::Done),
            State::Length(remaining) => {
                if buf.is_empty() {
                    return Ok(Decoded::NeedMore);
                }
                let n = (*remaining).min(buf.len() as u64);
                *remaining -= n;
                Ok(Decoded::Data(buf.split_to(n as usize).freeze()))
            }
            State::Chunked(c) => c.decode(buf),
            State::UntilClose => Ok(if buf.is_empty() {
                Decoded::NeedMore
            } else {
                Decoded::Data(buf.split().freeze())
            }),
        }
    }

    /// The connection reached EOF (call after [`decode`](BodyDecoder::decode) drained the buffer): `Ok` for an
    /// until-close body (it ends here) or a body already done, `Err(ClosedEarly)` if the framing expected more.
    pub fn eof(&mut self) -> Result<(), BodyError> {
        match &self.state {
            State::UntilClose => {
                self.state = State::Closed;
                Ok(())
            }
            _ if self.is_done() => Ok(()),
            _ => Err(BodyError::ClosedEarly),
        }
    }

    /// Whether the body has ended (the next [`decode`](BodyDecoder::decode) returns `Done`).
    pub fn is_done(&self) -> bool {
        match &self.state {
            State::Length(n) => *n == 0,
            State::Chunked(c) => c.is_done(),
            State::UntilClose => false,
            State::Closed => true,
        }
    }

    /// Bytes still expected for a `Length` body (`Some(0)` for an empty body), for a size hint; `None` for
    /// chunked and until-close bodies.
    pub fn remaining(&self) -> Option<u64> {
        match &self.state {
            State::Length(n) => Some(*n),
            _ => None,
        }
    }
}
