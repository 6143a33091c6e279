//! The request's host as the log record's `url` shows it (nginx's `$host`: the `Host` field without its port,
//! lower case), taken and written at once for the usual host, a lower-case name or IPv4 address.

use super::json;

/// nginx's `$host` of `host` (without its port, lower case) as the inside of a JSON string. Most hosts are
/// lower-case names or IPv4 addresses with a port, copied at once after one look at their bytes instead of
/// [`sluice_router::bare_host`]'s passes and a second one for escapes.
pub(super) fn host_text(out: &mut Vec<u8>, host: &str) {
    if !plain_host(out, host.as_bytes()) {
        json::text(out, &sluice_router::bare_host(host));
    }
}

/// [`host_text`] of the request's host ([`raw_host`]). A `Host` field of plain bytes is copied as it is,
/// without the look at it as text that [`raw_host`] takes first (plain bytes are text).
pub(super) fn request_host_text(out: &mut Vec<u8>, req: &http::request::Parts) {
    let field = host_field(req).map(http::HeaderValue::as_bytes);
    if !field.is_some_and(|b| plain_host(out, b)) {
        host_text(out, raw_host(req));
    }
}

/// Appends a host of plain bytes without its port and returns true; false (appending nothing) when a
/// byte is not plain.
fn plain_host(out: &mut Vec<u8>, b: &[u8]) -> bool {
    if !b.iter().all(|&c| HOST_PLAIN[usize::from(c)]) {
        return false;
    }
    // No brackets: the port is after the last colon, as `bare_host` finds it.
    let end = b.iter().rposition(|&c| c == b':').unwrap_or(b.len());
    out.extend_from_slice(&b[..end]);
    true
}

/// The bytes [`host_text`] copies as they are: lower-case letters, digits, `.`, `-` and the port's `:`.
const HOST_PLAIN: [bool; 256] = {
    let mut table = [false; 256];
    let mut c = 0;
    while c < 256 {
        table[c] = matches!(c as u8, b'a'..=b'z' | b'0'..=b'9' | b'.' | b'-' | b':');
        c += 1;
    }
    table
};

/// The request's `Host` (or, for an absolute-form target, its authority), port included.
pub(crate) fn raw_host(req: &http::request::Parts) -> &str {
    host_field(req)
        .and_then(|h| h.to_str().ok())
        .or_else(|| req.uri.authority().map(|a| a.as_str()))
        .unwrap_or_default()
}

/// The request's `Host` field. Clients send it first, so the first field is looked at before the map's
/// lookup (a hash and a probe).
fn host_field(req: &http::request::Parts) -> Option<&http::HeaderValue> {
    match req.headers.iter().next() {
        Some((name, value)) if name == http::header::HOST => Some(value),
        _ => req.headers.get(http::header::HOST),
    }
}
