//! Request paths: Kong's normalization before routing, and the upstream path built from the service path and
//! what is left of the request path (`strip_path`, `path_handling`).
//!
//! - [`normalize`] ([`sluice_model::uri_path`], which the 1.1/2.1 config migration uses too):
//!   percent-escapes of characters that are not reserved are decoded, reserved ones are kept
//!   (upper-cased), dot segments are removed and repeated slashes merged. The router and the upstream path
//!   both use the normalized path; `X-Forwarded-Path` keeps the raw one.
//! - [`upstream_path`]: with `strip_path`, the matched prefix (or the whole regex match) is cut off and a
//!   leading `./` or `../` of the rest dropped. `v0` joins the service path and the rest with exactly one
//!   slash and keeps a trailing slash of the request; `v1` (Kong's `traditional` router only; Kong's default
//!   router treats it as `v0`, Sluice honours it) concatenates them as they are.
//! - [`escape`]: what leaves for the upstream is percent-encoded again where needed.

use std::borrow::Cow;

pub use sluice_model::uri_path::normalize;

/// Percent-encodes every byte outside the set Kong lets through to the upstream (reserved characters,
/// letters, digits, `-_.~` and `%`, so existing escapes survive).
pub fn escape(path: &str) -> Cow<'_, str> {
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

/// Whether `b` goes to the upstream as it is: a table, since every byte of every upstream path is looked
/// up (a search of the 23 punctuation characters per byte cost ~40 instructions per request on `/r0`).
#[inline]
fn allowed(b: u8) -> bool {
    const ALLOWED: [bool; 256] = crate::strict::alphanumeric_and(b"!#$&'()*+,/:;=?@[]-_.~%");
    ALLOWED[b as usize]
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
