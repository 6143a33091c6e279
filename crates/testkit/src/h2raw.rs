//! A raw HTTP/2 client for strictness tests: writes exactly the header fields it is given (HPACK literals
//! without indexing, no Huffman, in the given order, pseudo-headers or not) on stream 1 of a new h2c
//! connection with prior knowledge, then tells what became of the stream. The `h2` crate's client refuses
//! to send malformed requests, which is what these tests need to send.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
// Frame types and flags (RFC 9113 §6).
const DATA: u8 = 0;
const HEADERS: u8 = 1;
const RST_STREAM: u8 = 3;
const SETTINGS: u8 = 4;
const GOAWAY: u8 = 7;
const END_STREAM: u8 = 0x1;
const ACK: u8 = 0x1;
const END_HEADERS: u8 = 0x4;
const PADDED: u8 = 0x8;
const PRIORITY: u8 = 0x20;

/// What became of the request's stream, as the client saw it first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum H2Answer {
    /// A final response with this status.
    Status(u16),
    /// RST_STREAM on the request's stream, with its error code's name.
    Reset(&'static str),
    /// GOAWAY (a connection error) before any answer on the stream, with its error code's name.
    GoAway(&'static str),
    /// The connection closed, or stayed quiet for the whole wait, without an answer.
    Nothing,
}

/// Sends one request on stream 1 of a new connection to `127.0.0.1:port`: a HEADERS frame with `fields`
/// (END_STREAM when there is no body), then the body as one DATA frame. Waits at most 3 s for an answer.
pub fn h2_request(port: u16, fields: &[(&str, &str)], body: Option<&[u8]>) -> H2Answer {
    let mut block = Vec::new();
    for (name, value) in fields {
        // Literal header field without indexing, new name (RFC 7541 §6.2.2).
        block.push(0);
        string(&mut block, name.as_bytes());
        string(&mut block, value.as_bytes());
    }
    let mut out = PREFACE.to_vec();
    frame(&mut out, SETTINGS, 0, 0, &[]);
    let flags = END_HEADERS | if body.is_none() { END_STREAM } else { 0 };
    frame(&mut out, HEADERS, flags, 1, &block);
    if let Some(body) = body {
        frame(&mut out, DATA, END_STREAM, 1, body);
    }
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else {
        return H2Answer::Nothing;
    };
    if stream.write_all(&out).is_err() {
        return H2Answer::Nothing;
    }
    let _ = stream.set_read_timeout(Some(Duration::from_millis(200)));
    let started = Instant::now();
    let mut buf = Vec::new();
    while started.elapsed() < Duration::from_secs(3) {
        while let Some((kind, flags, id, payload)) = next_frame(&mut buf) {
            if kind == SETTINGS && flags & ACK == 0 {
                let mut ack = Vec::new();
                frame(&mut ack, SETTINGS, ACK, 0, &[]);
                let _ = stream.write_all(&ack);
            }
            if let Some(answer) = answer(kind, flags, id, &payload) {
                return answer;
            }
        }
        let mut chunk = [0u8; 16384];
        match stream.read(&mut chunk) {
            Ok(0) => return H2Answer::Nothing,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => return H2Answer::Nothing,
        }
    }
    H2Answer::Nothing
}

/// The answer a frame gives, if it is one: a final status on stream 1, its reset, or an erroring GOAWAY.
fn answer(kind: u8, flags: u8, id: u32, payload: &[u8]) -> Option<H2Answer> {
    match kind {
        HEADERS if id == 1 => match status(flags, payload) {
            Some(s) if s >= 200 => Some(H2Answer::Status(s)),
            _ => None,
        },
        RST_STREAM if id == 1 => Some(H2Answer::Reset(reason(word(payload, 0)))),
        GOAWAY if word(payload, 4) != 0 => Some(H2Answer::GoAway(reason(word(payload, 4)))),
        _ => None,
    }
}

fn word(b: &[u8], at: usize) -> u32 {
    b.get(at..at + 4)
        .map(|w| u32::from_be_bytes([w[0], w[1], w[2], w[3]]) & 0x7fff_ffff)
        .unwrap_or(u32::MAX)
}

fn frame(out: &mut Vec<u8>, kind: u8, flags: u8, stream: u32, payload: &[u8]) {
    out.extend_from_slice(&(payload.len() as u32).to_be_bytes()[1..]);
    out.extend_from_slice(&[kind, flags]);
    out.extend_from_slice(&stream.to_be_bytes());
    out.extend_from_slice(payload);
}

/// Takes one whole frame off the front of `buf`: (type, flags, stream, payload).
fn next_frame(buf: &mut Vec<u8>) -> Option<(u8, u8, u32, Vec<u8>)> {
    if buf.len() < 9 {
        return None;
    }
    let len = u32::from_be_bytes([0, buf[0], buf[1], buf[2]]) as usize;
    if buf.len() < 9 + len {
        return None;
    }
    let id = word(buf, 5);
    let payload = buf[9..9 + len].to_vec();
    let (kind, flags) = (buf[3], buf[4]);
    buf.drain(..9 + len);
    Some((kind, flags, id, payload))
}

/// An HPACK string literal, raw (RFC 7541 §5.2).
fn string(out: &mut Vec<u8>, s: &[u8]) {
    integer(out, s.len(), 7, 0);
    out.extend_from_slice(s);
}

/// An HPACK integer with an `n`-bit prefix under `high` (RFC 7541 §5.1).
fn integer(out: &mut Vec<u8>, mut v: usize, n: u32, high: u8) {
    let max = (1usize << n) - 1;
    if v < max {
        out.push(high | v as u8);
        return;
    }
    out.push(high | max as u8);
    v -= max;
    while v >= 128 {
        out.push((v % 128) as u8 | 0x80);
        v /= 128;
    }
    out.push(v as u8);
}

/// Reads an HPACK integer with an `n`-bit prefix at `b[*at]`.
fn read_integer(b: &[u8], at: &mut usize, n: u32) -> Option<usize> {
    let max = (1usize << n) - 1;
    let mut v = (*b.get(*at)? as usize) & max;
    *at += 1;
    if v == max {
        let mut shift = 0;
        loop {
            let byte = *b.get(*at)?;
            *at += 1;
            v += ((byte & 0x7f) as usize) << shift;
            shift += 7;
            if byte & 0x80 == 0 {
                break;
            }
        }
    }
    Some(v)
}

/// The `:status` of a response's HEADERS payload, which servers encode as the block's first field: an
/// indexed static entry (200, 204, 206, 304, 400, 404, 500) or a literal with the `:status` name, whose
/// three digits may be Huffman-coded.
fn status(flags: u8, payload: &[u8]) -> Option<u16> {
    let mut at = 0;
    let mut end = payload.len();
    if flags & PADDED != 0 {
        end = end.checked_sub(*payload.first()? as usize)?;
        at = 1;
    }
    if flags & PRIORITY != 0 {
        at += 5;
    }
    let b = payload.get(..end)?;
    while b.get(at)? & 0xe0 == 0x20 {
        read_integer(b, &mut at, 5)?; // dynamic table size update
    }
    let first = *b.get(at)?;
    let name = match first {
        f if f & 0x80 != 0 => {
            let index = read_integer(b, &mut at, 7)?;
            return [200, 204, 206, 304, 400, 404, 500]
                .get(index.checked_sub(8)?)
                .copied();
        }
        f if f & 0x40 != 0 => read_integer(b, &mut at, 6)?,
        _ => read_integer(b, &mut at, 4)?,
    };
    if !(8..=14).contains(&name) {
        return None;
    }
    let huffman = *b.get(at)? & 0x80 != 0;
    let len = read_integer(b, &mut at, 7)?;
    let raw = b.get(at..at + len)?;
    let digits = if huffman {
        huffman_digits(raw)?
    } else {
        String::from_utf8(raw.to_vec()).ok()?
    };
    digits.parse().ok()
}

/// Decodes Huffman-coded decimal digits (RFC 7541 Appendix B: `0`-`2` are the 5-bit codes 0-2, `3`-`9` the
/// 6-bit codes 0x19-0x1f), stopping at the all-ones padding.
fn huffman_digits(raw: &[u8]) -> Option<String> {
    let bits: Vec<u8> = raw
        .iter()
        .flat_map(|b| (0..8).rev().map(move |i| (b >> i) & 1))
        .collect();
    let take = |at: usize, n: usize| -> Option<u8> {
        bits.get(at..at + n)
            .map(|s| s.iter().fold(0u8, |v, b| v << 1 | b))
    };
    let (mut at, mut out) = (0, String::new());
    while bits.len() - at >= 5 {
        match take(at, 5)? {
            c @ 0..=2 => {
                out.push((b'0' + c) as char);
                at += 5;
            }
            _ => match take(at, 6) {
                Some(c @ 0x19..=0x1f) => {
                    out.push((b'3' + c - 0x19) as char);
                    at += 6;
                }
                _ => break,
            },
        }
    }
    Some(out)
}

/// The name of an HTTP/2 error code (RFC 9113 §7).
fn reason(code: u32) -> &'static str {
    const NAMES: [&str; 14] = [
        "NO_ERROR",
        "PROTOCOL_ERROR",
        "INTERNAL_ERROR",
        "FLOW_CONTROL_ERROR",
        "SETTINGS_TIMEOUT",
        "STREAM_CLOSED",
        "FRAME_SIZE_ERROR",
        "REFUSED_STREAM",
        "CANCEL",
        "COMPRESSION_ERROR",
        "CONNECT_ERROR",
        "ENHANCE_YOUR_CALM",
        "INADEQUATE_SECURITY",
        "HTTP_1_1_REQUIRED",
    ];
    NAMES.get(code as usize).copied().unwrap_or("UNKNOWN")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_decode_indexed_raw_and_huffman() {
        assert_eq!(status(END_HEADERS, &[0x88]), Some(200));
        assert_eq!(status(END_HEADERS, &[0x8c]), Some(400));
        // nginx: incremental indexing, name index 8, raw "502".
        assert_eq!(status(END_HEADERS, &[0x48, 3, b'5', b'0', b'2']), Some(502));
        // "502" Huffman-coded: 011011 00000 00010, no padding.
        assert_eq!(status(END_HEADERS, &[0x08, 0x82, 0x6c, 0x02]), Some(502));
        // "431": 011010 011001 00001, then 7 bits of padding.
        assert_eq!(
            status(END_HEADERS, &[0x08, 0x83, 0x69, 0x90, 0xff]),
            Some(431)
        );
    }

    #[test]
    fn integers_round_trip() {
        for v in [0, 5, 126, 127, 128, 300, 70_000] {
            let mut out = Vec::new();
            integer(&mut out, v, 7, 0);
            assert_eq!(read_integer(&out, &mut 0, 7), Some(v));
        }
    }
}
