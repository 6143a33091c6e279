//! The `Host` header as nginx's `$host`: the name without its port, lower-cased. The proxy uses it for
//! `X-Forwarded-Host`, upstream SNI and health-check hosts, and log records for `request.url`.

use std::borrow::Cow;

/// `Host` without its port, lower-cased (an IPv6 literal keeps its brackets). Allocates only when the
/// name has upper-case letters.
pub fn bare_host(host: &str) -> Cow<'_, str> {
    let bare = match host.rfind(':') {
        Some(i) if !host[i..].contains(']') => &host[..i],
        _ => host,
    };
    if bare.bytes().any(|b| b.is_ascii_uppercase()) {
        Cow::Owned(bare.to_ascii_lowercase())
    } else {
        Cow::Borrowed(bare)
    }
}

#[cfg(test)]
mod tests {
    use super::bare_host;

    #[test]
    fn strips_the_port_and_lowers_the_case() {
        assert_eq!(bare_host("Example.COM:8000"), "example.com");
        assert_eq!(bare_host("[::1]:8000"), "[::1]");
        assert_eq!(bare_host("[::1]"), "[::1]");
        assert_eq!(bare_host("plain"), "plain");
    }
}
