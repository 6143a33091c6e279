//! The path as Kong's router sees it: Kong percent-decodes every escape of a non-reserved byte before
//! routing, non-ASCII bytes included, so `/caf%C3%A9` is `/café` to its router, and a path whose decoded
//! bytes are not UTF-8 (`/%FC%80%80%80%80%AF`) matches no route at all: Kong's router errors and the proxy
//! answers 404 whatever the routes.
//!
//! The proxy hands the router a path already normalized with ASCII escapes decoded and escapes of non-ASCII
//! bytes kept (so it stays a `str`); this module decodes those, and maps a match length in the decoded path
//! back to bytes of the proxy's path (what `strip_path` cuts).

use std::borrow::Cow;

/// The decoded path is not UTF-8: no route can match.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct NotUtf8;

fn hex(b: u8) -> Option<u8> {
    (b as char).to_digit(16).map(|d| d as u8)
}

/// The byte of a `%XX` escape of a non-ASCII byte at the start of `s`.
fn non_ascii_escape(s: &[u8]) -> Option<u8> {
    match s {
        [b'%', h, l, ..] => {
            let b = hex(*h)? << 4 | hex(*l)?;
            (b >= 0x80).then_some(b)
        }
        _ => None,
    }
}

/// `path` with escapes of non-ASCII bytes decoded. Borrows when there are none (the common case).
#[inline]
pub(crate) fn decode(path: &str) -> Result<Cow<'_, str>, NotUtf8> {
    let bytes = path.as_bytes();
    if !bytes.contains(&b'%') {
        return Ok(Cow::Borrowed(path));
    }
    decode_escapes(path)
}

#[cold]
fn decode_escapes(path: &str) -> Result<Cow<'_, str>, NotUtf8> {
    let bytes = path.as_bytes();
    let Some(first) = (0..bytes.len()).find(|&i| non_ascii_escape(&bytes[i..]).is_some()) else {
        return Ok(Cow::Borrowed(path));
    };
    let mut out = bytes[..first].to_vec();
    let mut i = first;
    while i < bytes.len() {
        match non_ascii_escape(&bytes[i..]) {
            Some(b) => {
                out.push(b);
                i += 3;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8(out).map(Cow::Owned).map_err(|_| NotUtf8)
}

/// How many bytes of `encoded` the first `decoded_len` bytes of its decoded form came from.
pub(crate) fn encoded_len(encoded: &str, decoded_len: usize) -> usize {
    let bytes = encoded.as_bytes();
    let (mut i, mut n) = (0, 0);
    while n < decoded_len && i < bytes.len() {
        i += if non_ascii_escape(&bytes[i..]).is_some() {
            3
        } else {
            1
        };
        n += 1;
    }
    i
}

#[cfg(test)]
mod tests;
