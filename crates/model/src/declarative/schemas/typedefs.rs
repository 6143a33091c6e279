//! Custom validators of Kong's `typedefs` (`kong/db/schema/typedefs.lua` at 3.9.1) that entity fields
//! share, with Kong's messages: names, tags, hosts without a port, upstream names, paths, header names.

use super::check_host;
use serde_json::Value;

fn text(v: &Value) -> &str {
    v.as_str().unwrap_or_default()
}

/// `typedefs.utf8_name` (services', routes' `name`): ASCII letters, digits, `.-_~`, or any non-ASCII.
pub(super) fn utf8_name(v: &Value) -> Result<(), String> {
    let s = text(v);
    let ok = s
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "-._~".contains(c) || !c.is_ascii());
    ok.then_some(()).ok_or_else(|| {
        format!(
            "invalid value '{s}': the only accepted ascii characters are alphanumerics or ., -, _, and ~"
        )
    })
}

/// `typedefs.tag`: printable ASCII but `,` and `/` (a space is allowed), or non-ASCII.
pub(super) fn tag(v: &Value) -> Result<(), String> {
    let s = text(v);
    let ok = s
        .bytes()
        .all(|b| b == b' ' || (b'!'..=b'~').contains(&b) && b != b',' && b != b'/' || b >= 128);
    ok.then_some(()).ok_or_else(|| {
        format!("invalid tag '{s}': expected printable ascii (except `,` and `/`) or valid utf-8 sequences")
    })
}

/// A host with a port Kong's `normalize_ip` reads (`name:80`, `1.2.3.4:80`, `[::1]:80`): its host.
fn without_port(s: &str) -> Option<&str> {
    let (host, port) = s.rsplit_once(':')?;
    let bracketed = host.starts_with('[') && host.ends_with(']');
    (port.parse::<u16>().is_ok() && (bracketed || !host.contains(':'))).then_some(host)
}

/// `typedefs.host` (a service's `host`): `invalid value: <host>`, or `must not have a port`.
pub fn plain_host(v: &Value) -> Result<(), String> {
    let s = text(v);
    if check_host(v).is_ok() {
        return Ok(());
    }
    match without_port(s) {
        Some(host) if check_host(&Value::from(host.trim_matches(['[', ']']))).is_ok() => {
            Err("must not have a port".into())
        }
        _ => Err(format!("invalid value: {s}")),
    }
}

/// An upstream's `name` (`validate_name` in `upstreams.lua`): a host name, with a port or not.
pub(super) fn upstream_name(v: &Value) -> Result<(), String> {
    let s = text(v);
    let host = without_port(s).unwrap_or(s);
    check_host(&Value::from(host.trim_matches(['[', ']'])))
        .map_err(|_| format!("Invalid name ('{s}'); must be a valid hostname"))
}

/// `typedefs.path`: starts with `/`, no empty segment, RFC 3986 characters, `%` only as `%XX`.
pub fn path(v: &Value) -> Result<(), String> {
    let s = text(v);
    if !s.starts_with('/') {
        return Err("should start with: /".into());
    }
    if s.contains("//") {
        return Err("must not have empty segments".into());
    }
    let allowed = |c: char| c.is_ascii_alphanumeric() || ".-_~/%:@!$&'()*+,;=".contains(c);
    if !s.chars().all(allowed) {
        return Err(format!(
            "invalid path: '{s}' (characters outside of the reserved list of RFC 3986 found)"
        ));
    }
    let bytes = s.as_bytes();
    for (i, _) in s.match_indices('%') {
        let hex = |j: usize| bytes.get(j).is_some_and(u8::is_ascii_hexdigit);
        if !(hex(i + 1) && hex(i + 2)) {
            let end = (i + 3).min(s.len());
            return Err(format!("invalid url-encoded value: '{}'", &s[i..end]));
        }
    }
    Ok(())
}

/// `typedefs.header_name`: letters, digits, `-` and `_`.
pub fn header_name(v: &Value) -> Result<(), String> {
    let s = text(v);
    let ok = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    ok.then_some(()).ok_or_else(|| {
        format!("bad header name '{s}', allowed characters are A-Z, a-z, 0-9, '_', and '-'")
    })
}

/// `typedefs.host_with_optional_port` (an upstream's `host_header`): `invalid hostname: <host>`.
pub(super) fn host_with_optional_port(v: &Value) -> Result<(), String> {
    let s = text(v);
    let host = without_port(s).unwrap_or(s);
    check_host(&Value::from(host.trim_matches(['[', ']'])))
}

/// `typedefs.sni` (a health check's `https_sni`, a Redis `server_name`): a host name, not an IP, no port.
pub fn sni(v: &Value) -> Result<(), String> {
    let s = text(v);
    plain_host(v)?;
    match s.trim_matches(['[', ']']).parse::<std::net::IpAddr>() {
        Ok(_) => Err("must not be an IP".into()),
        Err(_) => Ok(()),
    }
}

/// `typedefs.wildcard_host` (an SNI's `name`, a route's `snis`): an SNI with at most one `*`, leftmost
/// or rightmost.
pub(super) fn wildcard_host(v: &Value) -> Result<(), String> {
    let s = text(v);
    if let Some(i) = s.find('*') {
        if i != 0 && i != s.len() - 1 {
            return Err("wildcard must be leftmost or rightmost character".into());
        }
        if s.matches('*').count() > 1 {
            return Err("only one wildcard must be specified".into());
        }
        return sni(&Value::from(s.replace('*', "wildcard")))
            .map_err(|e| e.replace("wildcard", "*"));
    }
    sni(v)
}

/// A route's `headers` key: not `host` (routes match hosts with `hosts`), then a header name.
pub(super) fn route_header_key(v: &Value) -> Result<(), String> {
    if text(v).eq_ignore_ascii_case("host") {
        return Err(
            "cannot contain 'host' header, which must be specified in the 'hosts' attribute".into(),
        );
    }
    header_name(v)
}

/// `typedefs.url`, as LuaSocket's `url.parse` reads it: a host (after `//`) and a scheme.
pub fn url(v: &Value) -> Result<(), String> {
    let s = text(v);
    let scheme_len = s
        .find(':')
        .filter(|&i| {
            let name = &s[..i];
            name.starts_with(|c: char| c.is_ascii_alphanumeric())
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
        })
        .map_or(0, |i| i + 1);
    let rest = &s[scheme_len..];
    let host = rest.strip_prefix("//").map(|r| {
        let authority = r.split(['/', '?', '#']).next().unwrap_or_default();
        let host_port = authority.rsplit('@').next().unwrap_or_default();
        match host_port.strip_prefix('[') {
            Some(v6) => v6.split(']').next().unwrap_or_default(),
            None => host_port.split(':').next().unwrap_or_default(),
        }
    });
    match (host.filter(|h| !h.is_empty()), scheme_len) {
        (None, _) => Err("missing host in url".into()),
        (Some(_), 0) => Err("missing scheme in url".into()),
        _ => Ok(()),
    }
}

/// `typedefs.uuid`: 36 characters, hyphenated hex (Kong matches case-insensitively).
pub(super) fn uuid(v: &Value) -> Result<(), String> {
    let s = text(v);
    let ok = s.len() == 36 && uuid::Uuid::parse_str(s).is_ok();
    ok.then_some(())
        .ok_or_else(|| "expected a valid UUID".into())
}

/// Kong's `timestamp` fields (`created_at`, `updated_at`): a number above 0.
pub(super) fn timestamp(v: &Value) -> Result<(), String> {
    match v.as_f64() {
        Some(t) if t > 0.0 => Ok(()),
        _ => Err("expected a valid timestamp".into()),
    }
}
