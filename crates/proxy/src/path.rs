//! Request paths: Kong's normalization before routing, and the upstream path built from the service path and
//! what is left of the request path (`strip_path`, `path_handling`).
//!
//! - [`normalize`]: percent-escapes of characters that are not reserved are decoded, reserved ones are kept
//!   (upper-cased), dot segments are removed and repeated slashes merged. The router and the upstream path
//!   both use the normalized path; `X-Forwarded-Path` keeps the raw one.
//! - [`upstream_path`]: with `strip_path`, the matched prefix (or the whole regex match) is cut off and a
//!   leading `./` or `../` of the rest dropped. `v0` joins the service path and the rest with exactly one
//!   slash and keeps a trailing slash of the request; `v1` (Kong's `traditional` router only; Kong's default
//!   router treats it as `v0`, Sluice honours it) concatenates them as they are.
//! - [`escape`]: what leaves for the upstream is percent-encoded again where needed.

use std::borrow::Cow;

/// Reserved characters (RFC 3986 gen-delims, sub-delims, and `%`): their escapes stay escaped.
fn is_reserved(b: u8) -> bool {
    b"!*'();:@&=+$,/?%#[]".contains(&b)
}

fn hex(b: u8) -> Option<u8> {
    (b as char).to_digit(16).map(|d| d as u8)
}

/// Kong's path normalization. Borrows when there is nothing to change (the common case).
pub fn normalize(path: &str) -> Cow<'_, str> {
    let bytes = path.as_bytes();
    let has_escape = bytes.contains(&b'%');
    if !has_escape && !bytes.contains(&b'.') && !path.contains("//") {
        return Cow::Borrowed(path);
    }
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

/// Percent-encodes every byte outside the set Kong lets through to the upstream (reserved characters,
/// letters, digits, `-_.~` and `%`, so existing escapes survive).
pub fn escape(path: &str) -> Cow<'_, str> {
    let allowed = |b: u8| b.is_ascii_alphanumeric() || b"!#$&'()*+,/:;=?@[]-_.~%".contains(&b);
    if path.bytes().all(allowed) {
        return Cow::Borrowed(path);
    }
    let mut out = String::with_capacity(path.len() + 8);
    for b in path.bytes() {
        if allowed(b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    Cow::Owned(out)
}

/// Kong drops a leading `.`/`..` segment of what is left after stripping.
fn sanitize_rest(rest: &str) -> &str {
    match rest {
        "." | ".." => "",
        _ => rest
            .strip_prefix("./")
            .or_else(|| rest.strip_prefix("../"))
            .unwrap_or(rest),
    }
}

/// The upstream path (no query string) for a normalized request `path`.
///
/// `strip` is `None` when the route keeps the path (`strip_path: false`), else the byte length of the matched
/// prefix (0 when the route matched without a path).
pub fn upstream_path(
    service_path: Option<&str>,
    path: &str,
    strip: Option<usize>,
    v1: bool,
) -> String {
    let base = service_path.unwrap_or("/");
    let base_slash = base.ends_with('/');
    let base_trimmed = base.strip_suffix('/').unwrap_or(base);
    let after_first = path.get(1..).unwrap_or("");
    let Some(strip_len) = strip else {
        return match (v1 || base_slash, path == "/") {
            (true, _) => concat(base, after_first),
            (false, true) => base.to_string(),
            (false, false) => concat(base, path),
        };
    };
    let rest = sanitize_rest(path.get(strip_len.max(1)..).unwrap_or(""));
    if v1 {
        return if base_slash && rest.starts_with('/') {
            concat(base_trimmed, rest)
        } else {
            concat(base, rest)
        };
    }
    if rest.is_empty() {
        let trailing = path.ends_with('/') && (base_slash || path.len() > 1);
        return match (base == "/", base_slash, trailing) {
            (true, _, _) => "/".to_string(),
            (false, true, true) | (false, false, false) => base.to_string(),
            (false, true, false) => base_trimmed.to_string(),
            (false, false, true) => concat(base, "/"),
        };
    }
    match (base_slash, rest.starts_with('/')) {
        (true, true) => concat(base_trimmed, rest),
        (false, false) => format!("{base}/{rest}"),
        _ => concat(base, rest),
    }
}

fn concat(a: &str, b: &str) -> String {
    let mut s = String::with_capacity(a.len() + b.len());
    s.push_str(a);
    s.push_str(b);
    s
}

#[cfg(test)]
mod tests;
