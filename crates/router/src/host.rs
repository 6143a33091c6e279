//! Host and SNI matching as Kong's `traditional_compatible` router does it, and [`bare_host`] (nginx's `$host`).
//!
//! Kong splits a `Host` value at its first `:` when what follows is a number; otherwise the whole value is the
//! host (so a bracketed IPv6 literal with a port stays whole, as in Kong). A route host with a port matches
//! only when the host *and* the port match; the port is the `Host` header's, or the listening port when the
//! header has none. A route host without a port matches any port.

use std::borrow::Cow;

/// `Host` without its port, lower-cased (an IPv6 literal keeps its brackets). Allocates only when the
/// name has upper-case letters.
pub fn bare_host(host: &str) -> Cow<'_, str> {
    // One pass from the end over the bytes: it runs per request (`X-Forwarded-Host`, the log record), and
    // `rfind`, `contains` and `any` were three passes with their searchers' setup (~210 instructions).
    let b = host.as_bytes();
    let mut end = b.len();
    let mut bracket = false;
    for i in (0..b.len()).rev() {
        match b[i] {
            b']' => bracket = true,
            b':' => {
                if !bracket {
                    end = i;
                }
                break;
            }
            _ => {}
        }
    }
    let bare = &host[..end];
    if bare.bytes().any(|c| c.is_ascii_uppercase()) {
        Cow::Owned(bare.to_ascii_lowercase())
    } else {
        Cow::Borrowed(bare)
    }
}

/// Kong's `split_host_port`: `name:digits` → (name, port); anything else is all name.
#[inline]
pub(crate) fn split_host_port(value: &str) -> (&str, Option<u16>) {
    let Some(colon) = value.bytes().position(|b| b == b':') else {
        return (value, None);
    };
    match value[colon + 1..].parse() {
        Ok(port) => (&value[..colon], Some(port)),
        Err(_) => (value, None),
    }
}

/// A host or server name pattern: exact, `*.suffix` or `prefix.*`; compared without regard to ASCII case.
pub(crate) enum NameMatcher {
    Exact(String),
    /// `*.example.com`: the name ends with `.example.com`.
    Suffix(String),
    /// `example.*`: the name starts with `example.`.
    Prefix(String),
}

impl NameMatcher {
    pub fn new(pattern: &str) -> NameMatcher {
        let lower = pattern.to_ascii_lowercase();
        if let Some(suffix) = lower.strip_prefix('*') {
            NameMatcher::Suffix(suffix.to_string())
        } else if let Some(prefix) = lower.strip_suffix('*') {
            NameMatcher::Prefix(prefix.to_string())
        } else {
            NameMatcher::Exact(lower)
        }
    }

    /// A route SNI: as a host, except that a trailing dot (a fully qualified name) is not part of the name
    /// unless the pattern is `prefix.*` (Kong's `sni_val_transform`).
    pub fn sni(pattern: &str) -> NameMatcher {
        match pattern.strip_suffix('.') {
            Some(name) if !name.is_empty() => NameMatcher::new(name),
            _ => NameMatcher::new(pattern),
        }
    }

    pub fn is_wildcard(&self) -> bool {
        !matches!(self, NameMatcher::Exact(_))
    }

    pub fn matches(&self, name: &str) -> bool {
        let (n, b) = (name.len(), name.as_bytes());
        match self {
            NameMatcher::Exact(host) => name.eq_ignore_ascii_case(host),
            NameMatcher::Suffix(s) => {
                n > s.len() && b[n - s.len()..].eq_ignore_ascii_case(s.as_bytes())
            }
            NameMatcher::Prefix(p) => {
                n > p.len() && b[..p.len()].eq_ignore_ascii_case(p.as_bytes())
            }
        }
    }
}

/// One route host: a name pattern and, when the route named one, the port.
pub(crate) struct HostMatcher {
    name: NameMatcher,
    port: Option<u16>,
}

impl HostMatcher {
    pub fn new(route_host: &str) -> HostMatcher {
        let (name, port) = split_host_port(route_host);
        HostMatcher {
            name: NameMatcher::new(name),
            port,
        }
    }

    pub fn is_wildcard(&self) -> bool {
        self.name.is_wildcard()
    }

    /// `name` and `port` are the request's, split by [`split_host_port`] with the listening port filled in.
    pub fn matches(&self, name: &str, port: u16) -> bool {
        self.port.is_none_or(|p| p == port) && self.name.matches(name)
    }
}

#[cfg(test)]
mod tests;
