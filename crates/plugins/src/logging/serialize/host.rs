//! The request's host as the log record's `url` shows it (nginx's `$host`: the `Host` field without its port,
//! lower case), taken and written at once for the usual host, a lower-case name or IPv4 address.

use super::json;

/// nginx's `$host` of `host` (without its port, lower case) as the inside of a JSON string. Most hosts are
/// lower-case names or IPv4 addresses with a port, copied at once after one look at their bytes instead of
/// [`sluice_router::bare_host`]'s passes and a second one for escapes.
pub(super) fn host_text(out: &mut Vec<u8>, host: &str) {
    let b = host.as_bytes();
    if b.iter().all(|&c| HOST_PLAIN[usize::from(c)]) {
        // No brackets: the port is after the last colon, as `bare_host` finds it.
        let end = b.iter().rposition(|&c| c == b':').unwrap_or(b.len());
        out.extend_from_slice(&b[..end]);
    } else {
        json::text(out, &sluice_router::bare_host(host));
    }
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

/// The request's `Host` (or, for an absolute-form target, its authority), port included. Clients send
/// `Host` first, so the first field is looked at before the map's lookup (a hash and a probe).
pub(crate) fn raw_host(req: &http::request::Parts) -> &str {
    let host = match req.headers.iter().next() {
        Some((name, value)) if name == http::header::HOST => Some(value),
        _ => req.headers.get(http::header::HOST),
    };
    host.and_then(|h| h.to_str().ok())
        .or_else(|| req.uri.authority().map(|a| a.as_str()))
        .unwrap_or_default()
}
