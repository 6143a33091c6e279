//! The request-head rules of RFC 9112 and RFC 9113 that the servers leave to the driver, checked once per
//! request before routing, with nginx's answers (`crates/sluice/tests/differential.rs` holds both to the
//! same vectors): `Host` (one, present in HTTP/1.1, a valid authority), the authority of an absolute-form
//! target over `Host`, h2's `host` against `:authority` (and one of them present), `Content-Length` (one
//! line, never beside `Transfer-Encoding`), transfer codings other than `chunked`, methods nginx would not
//! parse, and targets that are not a path (CONNECT, `*`).
//!
//! The HTTP/1.1 parser (`sluice_h1::parse_request`) already refuses what breaks framing (repeated
//! `Content-Length` lines, `Content-Length` beside `Transfer-Encoding`, codings other than `chunked`, bare CR,
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
    if (parts.method == Method::CONNECT || parts.uri.path() == "*") && !extended_connect(parts) {
        return Err(Malformed::BadRequest);
    }
    // One pass over the (few) fields instead of a hashed lookup per rule.
    let (mut hosts, mut lengths, mut te) = (0u32, 0u32, false);
    for (name, value) in &parts.headers {
        if *name == HOST {
            hosts += 1;
            if !valid_authority(value.as_bytes()) {
                return Err(Malformed::BadRequest);
            }
        } else if *name == CONTENT_LENGTH {
            lengths += 1;
        } else if *name == TRANSFER_ENCODING {
            te = true;
        }
    }
    if te {
        transfer_coding(parts)?;
    }
    if lengths > 1 || (lengths == 1 && te) {
        // Content-Length beside Transfer-Encoding (a smuggling attempt: RFC 9112 §6.1 lets a server refuse
        // it, and nginx does), or repeated, even with equal values (h2 lets them through; nginx refuses).
        return Err(Malformed::BadRequest);
    }
    if hosts > 1 {
        return Err(Malformed::BadRequest);
    }
    host(parts, hosts == 1)
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

/// Whether a request whose target is not a path (a CONNECT, or the asterisk-form `*`) is h2's extended
/// CONNECT for WebSocket (RFC 8441, `upgrade`), the one such request the gateway serves. Any other is
/// refused with 400, as nginx does (it implements neither): forwarded, it would become a request for `/`
/// upstream, and an extended CONNECT for another `:protocol` a CONNECT upstream.
/// `*` with another method than OPTIONS is malformed anyway (RFC 9112 §3.2.4, RFC 9113 §8.3.1), and so is
/// an h2 CONNECT without `:authority` (RFC 9113 §8.5).
#[cold]
fn extended_connect(parts: &request::Parts) -> bool {
    parts.method == Method::CONNECT
        && parts
            .extensions
            .get::<hyper::ext::Protocol>()
            .is_some_and(|p| p.as_str().eq_ignore_ascii_case("websocket"))
}

/// `Host` by version: HTTP/1.1 needs exactly one (RFC 9112 §3.2), h2 `:authority` or `host` (an `http`
/// URI without a host is invalid, RFC 9110 §4.2.1; nginx says 400 too); an absolute-form target's authority wins
/// over it, as in nginx; h2's `host`, when sent beside `:authority`, must name the same authority
/// (RFC 9113 §8.3.1); every `Host` must be a valid `host[:port]`.
fn host(parts: &mut request::Parts, has_host: bool) -> Result<(), Malformed> {
    let Some(authority) = parts.uri.authority().map(|a| a.as_str()) else {
        return match (parts.version, has_host) {
            (Version::HTTP_11 | Version::HTTP_2, false) => Err(Malformed::BadRequest),
            _ => Ok(()),
        };
    };
    let host = has_host.then(|| parts.headers.get(HOST)).flatten();
    match (parts.version, host) {
        (Version::HTTP_2 | Version::HTTP_3, Some(host)) => {
            if !host.as_bytes().eq_ignore_ascii_case(authority.as_bytes()) {
                return Err(Malformed::BadRequest);
            }
            Ok(())
        }
        _ => {
            if !valid_authority(authority.as_bytes()) {
                return Err(Malformed::BadRequest);
            }
            let value = HeaderValue::from_str(authority).map_err(|_| Malformed::BadRequest)?;
            parts.headers.insert(HOST, value);
            Ok(())
        }
    }
}

/// The bytes of a reg-name or IPv4 address: unreserved, `%` (pct-encoded) and sub-delims (RFC 3986 §3.2.2).
const REG_NAME: [bool; 256] = alphanumeric_and(b"-._~%!$&'()*+,;=");

/// A byte table: letters, digits and the bytes of `extra` are in it (for checks run on every byte of a
/// request's head or path).
pub(crate) const fn alphanumeric_and(extra: &[u8]) -> [bool; 256] {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 256 {
        table[b] = (b as u8).is_ascii_alphanumeric();
        b += 1;
    }
    let mut i = 0;
    while i < extra.len() {
        table[extra[i] as usize] = true;
        i += 1;
    }
    table
}

/// Whether `v` is `host[:port]` as RFC 3986 allows it in `Host`: a reg-name or IPv4 (unreserved,
/// pct-encoded and sub-delims characters), or a bracketed IPv6 literal, then an optional decimal port. No
/// userinfo, path, space or control character.
pub fn valid_authority(v: &[u8]) -> bool {
    if v.first() == Some(&b'[') {
        return valid_literal(v);
    }
    // One pass: the name up to `:`, then the port's digits.
    for (i, &b) in v.iter().enumerate() {
        if b == b':' {
            let digits = &v[i + 1..];
            return i > 0 && digits.len() <= 5 && digits.iter().all(u8::is_ascii_digit);
        }
        if !REG_NAME[b as usize] {
            return false;
        }
    }
    !v.is_empty()
}

/// `[` IPv6 literal `]`, then an optional port (rare: off the usual path).
#[cold]
fn valid_literal(v: &[u8]) -> bool {
    let Some(end) = v.iter().position(|&b| b == b']') else {
        return false;
    };
    let literal = &v[1..end];
    let literal_ok = !literal.is_empty()
        && literal
            .iter()
            .all(|b| b.is_ascii_hexdigit() || b":.".contains(b));
    let port_ok = match &v[end + 1..] {
        [] => true,
        [b':', digits @ ..] => digits.len() <= 5 && digits.iter().all(u8::is_ascii_digit),
        _ => false,
    };
    literal_ok && port_ok
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
