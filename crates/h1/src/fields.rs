//! Value parsing for the three header fields that decide message framing and connection reuse:
//! `Content-Length`, `Transfer-Encoding` and `Connection` (comma-separated lists, RFC 9110 §5.6.1).

#[cfg(test)]
mod tests;

/// Strips optional whitespace (SP / HTAB) from both ends of a list member.
fn trim_ows(mut s: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = s {
        s = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = s {
        s = rest;
    }
    s
}

/// The list members of one field value, trimmed, empty members skipped (RFC 9110 §5.6.1.2 says a
/// recipient ignores them).
fn members(value: &[u8]) -> impl Iterator<Item = &[u8]> {
    value
        .split(|&b| b == b',')
        .map(trim_ows)
        .filter(|m| !m.is_empty())
}

/// Parses one `Content-Length` field line: every comma-separated member must be the same decimal number
/// (digits only). `None` for an empty value, a bad member, overflow, or members that differ.
pub(crate) fn content_length(value: &[u8]) -> Option<u64> {
    // The usual case, a single number with no list around it, skips the list machinery.
    if let Some(n) = decimal(value) {
        return Some(n);
    }
    let mut out = None;
    for member in value.split(|&b| b == b',') {
        let n = decimal(trim_ows(member))?;
        if *out.get_or_insert(n) != n {
            return None;
        }
    }
    out
}

/// A non-empty run of ASCII digits as a `u64`; `None` for anything else or overflow.
pub(crate) fn decimal(digits: &[u8]) -> Option<u64> {
    if digits.is_empty() {
        return None;
    }
    let mut n: u64 = 0;
    for &b in digits {
        let d = b.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        n = n.checked_mul(10)?.checked_add(u64::from(d))?;
    }
    Some(n)
}

/// The last non-empty member of a field value (for `Transfer-Encoding`: the final coding so far).
pub(crate) fn last_member(value: &[u8]) -> Option<&[u8]> {
    members(value).last()
}

/// Connection options found in a `Connection` field value.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ConnectionTokens {
    /// A `close` token: the server closes after this response.
    pub(crate) close: bool,
    /// A `keep-alive` token: an HTTP/1.0 server offers to keep the connection open.
    pub(crate) keep_alive: bool,
}

impl ConnectionTokens {
    /// Adds the tokens of one `Connection` field line (case-insensitive).
    pub(crate) fn add(&mut self, value: &[u8]) {
        for token in members(value) {
            if token.eq_ignore_ascii_case(b"close") {
                self.close = true;
            } else if token.eq_ignore_ascii_case(b"keep-alive") {
                self.keep_alive = true;
            }
        }
    }
}
