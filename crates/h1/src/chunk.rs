//! Chunked encoding (RFC 9112 §7.1): framing for a streamed body of unknown length (a request body sent
//! upstream, a response body sent to a client).

use bytes::BufMut;

#[cfg(test)]
mod tests;

/// The last chunk with an empty trailer section: written once after the final data chunk.
pub const LAST_CHUNK: &[u8] = b"0\r\n\r\n";

/// Writes the chunk-size line for a chunk of `len` bytes (`{len:x}\r\n`) to `out`; the caller writes the data
/// and then `"\r\n"`. `len` must not be 0 for a data chunk (that is [`LAST_CHUNK`]).
pub fn chunk_header(len: usize, out: &mut impl BufMut) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut line = [0u8; 2 * std::mem::size_of::<usize>() + 2];
    let mut start = line.len() - 2;
    line[start..].copy_from_slice(b"\r\n");
    let mut n = len;
    loop {
        start -= 1;
        line[start] = HEX[n & 0xf];
        n >>= 4;
        if n == 0 {
            break;
        }
    }
    out.put_slice(&line[start..]);
}
