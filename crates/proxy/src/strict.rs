//! The request-head rules of RFC 9112 and RFC 9113 that hyper leaves to the application, checked once per
//! request before routing, with nginx's answers (`crates/sluice/tests/differential.rs` holds both to the
//! same vectors): `Host` (one, present in HTTP/1.1, a valid authority), the authority of an absolute-form
//! target over `Host`, h2's `host` against `:authority`, `Content-Length` (one line, never beside
//! `Transfer-Encoding`), transfer codings other than `chunked`, and methods nginx would not parse.
//!
//! hyper already refuses what breaks its own framing (differing `Content-Length` lines in HTTP/1, bare CR,
//! obs-fold, bad chunk sizes); what is here decides where the request goes, or what the upstream is told.

use http::header::{HeaderValue, CONTENT_LENGTH, HOST, TRANSFER_ENCODING};
use http::{request, Method, Version};

/// Why a request head cannot be proxied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Malformed {
    /// 400: the head breaks a MUST of the protocol (nginx: "client sent invalid host header" and the like).
    BadRequest,
    /// 501: a transfer coding the gateway does not implement (nginx: "unknown transfer-encoding").
    UnknownCoding,
}

/// Checks `parts` and puts it in the one form the router and the wire writer expect: `Host` is the
/// authority the request is for (an absolute-form target's or h2's `:authority`). Cheap for the usual
/// head: a standard method, one `Host` and at most one framing field.
pub fn check(parts: &mut request::Parts) -> Result<(), Malformed> {
    if !known_method(&parts.method) && !nginx_method(parts.method.as_str()) {
        return Err(Malformed::BadRequest);
    }
    let te = parts.headers.contains_key(TRANSFER_ENCODING);
    if te {
        transfer_coding(parts)?;
    }
    if parts.headers.contains_key(CONTENT_LENGTH) {
        one_content_length(parts, te)?;
    }
    host(parts)
}

/// One of the methods `http` has a constant for (no scan needed).
fn known_method(m: &Method) -> bool {
    matches!(
        *m,
        Method::GET
            | Method::POST
            | Method::PUT
            | Method::DELETE
            | Method::HEAD
            | Method::OPTIONS
            | Method::PATCH
            | Method::CONNECT
            | Method::TRACE
    )
}

/// nginx parses a method of upper-case letters, `_` and `-` only (`get` is 400 there, and Kong's plugins
/// compare methods in upper case).
fn nginx_method(m: &str) -> bool {
    m.bytes()
        .all(|b| b.is_ascii_uppercase() || b == b'_' || b == b'-')
}

/// `Host` by version: HTTP/1.1 needs exactly one (RFC 9112 §3.2); an absolute-form target's authority wins
/// over it, as in nginx; h2's `host`, when sent beside `:authority`, must name the same authority
/// (RFC 9113 §8.3.1); every `Host` must be a valid `host[:port]`.
fn host(parts: &mut request::Parts) -> Result<(), Malformed> {
    let mut hosts = parts.headers.get_all(HOST).iter();
    let (first, second) = (hosts.next(), hosts.next());
    if second.is_some() {
        return Err(Malformed::BadRequest);
    }
    if let Some(v) = first {
        if !valid_authority(v.as_bytes()) {
            return Err(Malformed::BadRequest);
        }
    }
    let authority = parts.uri.authority().map(|a| a.as_str());
    match (parts.version, first, authority) {
        (Version::HTTP_2 | Version::HTTP_3, Some(host), Some(authority)) => {
            if !host.as_bytes().eq_ignore_ascii_case(authority.as_bytes()) {
                return Err(Malformed::BadRequest);
            }
            Ok(())
        }
        (_, _, Some(authority)) => {
            if !valid_authority(authority.as_bytes()) {
                return Err(Malformed::BadRequest);
            }
            let value = HeaderValue::from_str(authority).map_err(|_| Malformed::BadRequest)?;
            parts.headers.insert(HOST, value);
            Ok(())
        }
        (Version::HTTP_11, None, None) => Err(Malformed::BadRequest),
        _ => Ok(()),
    }
}

/// Whether `v` is `host[:port]` as RFC 3986 allows it in `Host`: a reg-name or IPv4 (unreserved,
/// pct-encoded and sub-delims characters), or a bracketed IPv6 literal, then an optional decimal port. No
/// userinfo, path, space or control character.
pub fn valid_authority(v: &[u8]) -> bool {
    let (host, port) = match v.strip_prefix(b"[") {
        Some(rest) => {
            let Some(end) = rest.iter().position(|&b| b == b']') else {
                return false;
            };
            let literal = &rest[..end];
            if literal.is_empty()
                || !literal
                    .iter()
                    .all(|b| b.is_ascii_hexdigit() || b":.".contains(b))
            {
                return false;
            }
            (&b""[..], &rest[end + 1..])
        }
        None => match v.iter().position(|&b| b == b':') {
            Some(i) => (&v[..i], &v[i..]),
            None => (v, &b""[..]),
        },
    };
    let host_ok = host
        .iter()
        .all(|&b| b.is_ascii_alphanumeric() || b"-._~%!$&'()*+,;=".contains(&b));
    let port_ok = match port {
        [] => true,
        [b':', digits @ ..] => digits.len() <= 5 && digits.iter().all(u8::is_ascii_digit),
        _ => false,
    };
    host_ok && port_ok && !(host.is_empty() && v.first() != Some(&b'['))
}

/// `Content-Length` beside `Transfer-Encoding` (a smuggling attempt: RFC 9112 §6.1 lets a server refuse
/// it, and nginx does), or more than one `Content-Length` line, even equal ones (h2 lets them through;
/// nginx refuses them): 400.
fn one_content_length(parts: &request::Parts, te: bool) -> Result<(), Malformed> {
    let mut lines = parts.headers.get_all(CONTENT_LENGTH).iter();
    match (te, lines.next(), lines.next()) {
        (false, _, None) => Ok(()),
        _ => Err(Malformed::BadRequest),
    }
}

/// nginx implements `chunked` alone: any other coding, or `chunked` that is not the only one, is 501
/// (hyper would read `gzip, chunked` as chunked and the upstream would get a coding it never agreed to).
/// HTTP/1.0 has no transfer codings at all (RFC 9112 §6.1): 400.
fn transfer_coding(parts: &request::Parts) -> Result<(), Malformed> {
    if parts.version == Version::HTTP_10 {
        return Err(Malformed::BadRequest);
    }
    let mut codings = parts
        .headers
        .get_all(TRANSFER_ENCODING)
        .iter()
        .flat_map(|v| {
            v.as_bytes()
                .split(|&b| b == b',')
                .map(<[u8]>::trim_ascii)
                .filter(|c| !c.is_empty())
        });
    match (codings.next(), codings.next()) {
        (Some(c), None) if c.eq_ignore_ascii_case(b"chunked") => Ok(()),
        _ => Err(Malformed::UnknownCoding),
    }
}

#[cfg(test)]
mod tests;
