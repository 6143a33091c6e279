//! The chunked transfer coding (RFC 9112 §7.1) as a byte-at-a-time state machine for the framing lines, with
//! chunk data split off the buffer in one piece. Framing lines need CRLF (as hyper does); extensions and
//! trailer fields are skipped.

use bytes::{Buf, BytesMut};

use super::{BodyError, Decoded};

#[cfg(test)]
mod tests;

/// Most hex digits in a chunk size (a `u64`).
const MAX_SIZE_DIGITS: u8 = 16;
/// Most chunk-extension bytes accepted over a whole body (hyper's limit): they are skipped, but a server
/// sending nothing else would keep the proxy busy.
const EXTENSIONS_LIMIT: u64 = 16 * 1024;
/// Most trailer-section bytes accepted (hyper's limit); trailers are discarded.
const TRAILERS_LIMIT: u64 = 16 * 1024;

/// Where the decoder is within the chunked body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    /// Hex digits of a chunk size.
    Size,
    /// Whitespace after the size.
    SizeWs,
    /// A chunk extension, up to the CR.
    Ext,
    /// The LF ending a size line.
    SizeLf,
    /// Chunk data; `size` bytes left.
    Data,
    /// The CR after chunk data.
    DataCr,
    /// The LF after chunk data.
    DataLf,
    /// The start of a trailer line or the final CRLF.
    TrailerStart,
    /// Inside a trailer field line.
    Trailer,
    /// The LF ending a trailer field line.
    TrailerLf,
    /// The LF of the final CRLF.
    EndLf,
    /// The body has ended.
    Done,
}

/// Decoder state for a chunked body.
#[derive(Debug)]
pub(super) struct Chunked {
    step: Step,
    /// The chunk size being read (in `Size`), or the data bytes left (in `Data`).
    size: u64,
    /// Hex digits read for the current size.
    digits: u8,
    /// Extension bytes skipped so far.
    ext_bytes: u64,
    /// Trailer bytes skipped so far.
    trailer_bytes: u64,
}

/// The value of a hex digit of either case.
#[inline]
fn hex(b: u8) -> Option<u64> {
    match b {
        b'0'..=b'9' => Some(u64::from(b - b'0')),
        b'a'..=b'f' => Some(u64::from(b - b'a' + 10)),
        b'A'..=b'F' => Some(u64::from(b - b'A' + 10)),
        _ => None,
    }
}

/// A byte allowed inside a chunk extension or trailer line: anything but controls (HTAB allowed).
#[inline]
fn is_line_byte(b: u8) -> bool {
    b == b'\t' || (b >= 0x20 && b != 0x7f)
}

impl Chunked {
    pub(super) fn new() -> Self {
        Chunked {
            step: Step::Size,
            size: 0,
            digits: 0,
            ext_bytes: 0,
            trailer_bytes: 0,
        }
    }

    pub(super) fn is_done(&self) -> bool {
        self.step == Step::Done
    }

    /// See [`BodyDecoder::decode`](super::BodyDecoder::decode): framing bytes are consumed until data is
    /// available, the body ends, or the buffer runs out.
    pub(super) fn decode(&mut self, buf: &mut BytesMut) -> Result<Decoded, BodyError> {
        if self.step != Step::Data && self.step != Step::Done {
            let used = self.framing_bytes(buf)?;
            buf.advance(used);
        }
        match self.step {
            Step::Done => Ok(Decoded::Done),
            Step::Data if !buf.is_empty() => {
                let n = self.size.min(buf.len() as u64);
                self.size -= n;
                if self.size == 0 {
                    self.step = Step::DataCr;
                }
                Ok(Decoded::Data(buf.split_to(n as usize).freeze()))
            }
            _ => Ok(Decoded::NeedMore),
        }
    }

    /// Runs the framing-line states over the front of `buf` until chunk data starts, the body ends, or `buf`
    /// runs out; returns how many bytes were used.
    fn framing_bytes(&mut self, buf: &[u8]) -> Result<usize, BodyError> {
        for (i, &b) in buf.iter().enumerate() {
            self.step = self.step_byte(b)?;
            if matches!(self.step, Step::Data | Step::Done) {
                return Ok(i + 1);
            }
        }
        Ok(buf.len())
    }

    /// The state after byte `b` of a framing line.
    #[inline]
    fn step_byte(&mut self, b: u8) -> Result<Step, BodyError> {
        Ok(match (self.step, b) {
            (Step::Size, _) if hex(b).is_some() => {
                if self.digits == MAX_SIZE_DIGITS {
                    return Err(BodyError::BadChunk);
                }
                self.digits += 1;
                self.size = (self.size << 4) | hex(b).unwrap_or(0);
                Step::Size
            }
            // A size needs at least one digit.
            (Step::Size, _) if self.digits == 0 => return Err(BodyError::BadChunk),
            (Step::Size | Step::SizeWs, b' ' | b'\t') => Step::SizeWs,
            (Step::Size | Step::SizeWs, b';') => Step::Ext,
            (Step::Size | Step::SizeWs | Step::Ext, b'\r') => Step::SizeLf,
            (Step::Ext, _) if is_line_byte(b) => {
                self.ext_bytes += 1;
                if self.ext_bytes > EXTENSIONS_LIMIT {
                    return Err(BodyError::BadChunk);
                }
                Step::Ext
            }
            (Step::SizeLf, b'\n') if self.size == 0 => Step::TrailerStart,
            (Step::SizeLf, b'\n') => Step::Data,
            (Step::DataCr, b'\r') => Step::DataLf,
            (Step::DataLf, b'\n') => {
                self.size = 0;
                self.digits = 0;
                Step::Size
            }
            (Step::TrailerStart, b'\r') => Step::EndLf,
            (Step::Trailer, b'\r') => Step::TrailerLf,
            (Step::TrailerStart | Step::Trailer, _) if is_line_byte(b) => {
                self.trailer_bytes += 1;
                if self.trailer_bytes > TRAILERS_LIMIT {
                    return Err(BodyError::BadChunk);
                }
                Step::Trailer
            }
            (Step::TrailerLf, b'\n') => Step::TrailerStart,
            (Step::EndLf, b'\n') => Step::Done,
            _ => return Err(BodyError::BadChunk),
        })
    }
}
