//! Kong's normalization of a URI path (`kong.tools.uri.normalize` with slashes merged): percent-escapes
//! of ASCII characters that are not reserved are decoded, reserved ones stay (upper-cased), dot segments
//! are removed (RFC 3986 §5.2.4) and repeated slashes merged. The proxy normalizes every request path with
//! it before routing; the 1.1/2.1 config migration normalizes plain route paths with it, as Kong's does.

use std::borrow::Cow;

/// Reserved characters (RFC 3986 gen-delims, sub-delims, and `%`): their escapes stay escaped.
fn is_reserved(b: u8) -> bool {
    b"!*'();:@&=+$,/?%#[]".contains(&b)
}

fn hex(b: u8) -> Option<u8> {
    (b as char).to_digit(16).map(|d| d as u8)
}

/// Kong's path normalization. Borrows when there is nothing to change (the common case, checked inline
/// in one pass over the bytes: every request's path comes here).
#[inline]
pub fn normalize(path: &str) -> Cow<'_, str> {
    let bytes = path.as_bytes();
    let mut last = 0u8;
    for &b in bytes {
        if b == b'%' || b == b'.' || (b == b'/' && last == b'/') {
            return normalize_slow(path);
        }
        last = b;
    }
    Cow::Borrowed(path)
}

/// [`normalize`] of a path with an escape, a dot or a double slash.
#[inline(never)]
fn normalize_slow(path: &str) -> Cow<'_, str> {
    let bytes = path.as_bytes();
    let has_escape = bytes.contains(&b'%');
    let decoded = if has_escape {
        decode_unreserved(bytes)
    } else {
        bytes.to_vec()
    };
    let out = remove_dot_segments(&decoded);
    // Only ASCII is decoded, so the result is valid UTF-8.
    Cow::Owned(String::from_utf8_lossy(&out).into_owned())
}

/// Decodes `%XX` of ASCII characters that are not reserved; upper-cases the escapes that stay. Escapes of
/// non-ASCII bytes stay encoded so the path remains valid UTF-8.
fn decode_unreserved(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let escape = match (bytes[i], bytes.get(i + 1), bytes.get(i + 2)) {
            (b'%', Some(h), Some(l)) => hex(*h).zip(hex(*l)).map(|(h, l)| h << 4 | l),
            _ => None,
        };
        match escape {
            Some(c) if c < 0x80 && !is_reserved(c) => out.push(c),
            Some(_) => out.extend(bytes[i..i + 3].iter().map(u8::to_ascii_uppercase)),
            None => {
                out.push(bytes[i]);
                i += 1;
                continue;
            }
        }
        i += 3;
    }
    out
}

/// RFC 3986 §5.2.4, plus merging `//` into `/`.
fn remove_dot_segments(mut input: &[u8]) -> Vec<u8> {
    let mut segments: Vec<&[u8]> = Vec::new();
    while !input.is_empty() {
        if input == b"/." || input == b"/.." {
            if input == b"/.." {
                segments.pop();
            }
            input = b"/";
        } else if input == b"." || input == b".." {
            input = b"";
        } else if input.starts_with(b"../") {
            input = &input[3..];
        } else if input.starts_with(b"./") || input.starts_with(b"/./") {
            input = &input[2..];
        } else if input.starts_with(b"/../") {
            input = &input[3..];
            segments.pop();
        } else if input.starts_with(b"//") {
            input = &input[1..];
        } else {
            let end = input[1..]
                .iter()
                .position(|b| *b == b'/')
                .map_or(input.len(), |p| p + 1);
            segments.push(&input[..end]);
            input = &input[end..];
        }
    }
    segments.concat()
}
