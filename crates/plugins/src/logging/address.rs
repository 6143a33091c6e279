//! Kong's `host` and `port` field types (`typedefs.host`, `typedefs.port`) for the socket log plugins'
//! receivers, with Kong's validation messages.

#[cfg(test)]
mod tests;

use serde_json::Value;
use sluice_model::schema::Field;
use std::net::Ipv6Addr;

/// Kong's `typedefs.host`: a host name, an IPv4 or an IPv6 address (bracketed or not), without a port.
pub fn host() -> Field {
    Field::string().check(check_host)
}

/// Kong's `typedefs.port`: an integer from 0 to 65535.
pub fn port() -> Field {
    Field::integer().between(0.0, 65535.0)
}

/// Kong's host validator, with its messages: `invalid value: <host>`, or `must not have a port`.
fn check_host(v: &Value) -> Result<(), String> {
    let host = v.as_str().unwrap_or_default();
    match parse_host(host) {
        Some(false) => Ok(()),
        Some(true) => Err("must not have a port".into()),
        None => Err(format!("invalid value: {host}")),
    }
}

/// Reads `host` as Kong's `normalize_ip` does: None when invalid, else whether it carries a port (a port
/// above 65535 counts as one, as Kong's "invalid port number" leads to the same message).
fn parse_host(host: &str) -> Option<bool> {
    let colons = host.matches(':').count();
    if colons > 1 {
        return ipv6_has_port(host);
    }
    let (name, port) = match host.rsplit_once(':') {
        Some((name, port)) if !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()) => {
            (name, true)
        }
        Some(_) => return None,
        None => (host, false),
    };
    if host
        .bytes()
        .all(|b| b.is_ascii_digit() || b == b'.' || b == b':')
    {
        // Kong takes digits and dots as an IPv4 address: each part 1 to 3 digits, at most 255.
        let parts: Vec<&str> = name.split('.').collect();
        let octet = |p: &&str| (1..=3).contains(&p.len()) && p.parse::<u8>().is_ok();
        return (parts.len() == 4 && parts.iter().all(octet)).then_some(port);
    }
    let chars_ok = !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._".contains(&b));
    let labels: Vec<&str> = name.split('.').collect();
    let labels_ok = labels
        .iter()
        .enumerate()
        .all(|(i, l)| !l.ends_with('-') && (!l.is_empty() || i + 1 == labels.len()));
    (chars_ok && labels_ok).then_some(port)
}

/// An IPv6 address, `[addr]` or `[addr]:port`.
fn ipv6_has_port(host: &str) -> Option<bool> {
    let (addr, port) = match host.strip_prefix('[') {
        Some(rest) => {
            let (addr, after) = rest.split_once(']')?;
            match after.strip_prefix(':') {
                Some(p) if p.bytes().all(|b| b.is_ascii_digit()) => (addr, true),
                Some(_) => return None,
                None if after.is_empty() => (addr, false),
                None => return None,
            }
        }
        None => (host, false),
    };
    // Kong's pattern takes eight hex groups after expanding `::`; no embedded IPv4.
    (!addr.contains('.') && addr.parse::<Ipv6Addr>().is_ok()).then_some(port)
}

/// Parses a config holding plugin `name` with `config` (a YAML flow mapping), for the socket plugins'
/// schema tests: the model, or every error as `field: message`, joined by `; `.
#[cfg(test)]
pub(crate) fn parse_plugin(name: &str, config: &str) -> Result<sluice_model::Config, String> {
    let yaml = format!("_format_version: \"3.0\"\nplugins:\n- name: {name}\n  config: {config}\n");
    sluice_model::declarative::parse(&yaml, &crate::Registry::builtin()).map_err(|e| {
        let fields = e.entities.iter().flat_map(|x| &x.errors);
        let lines: Vec<String> = fields
            .map(|f| format!("{}: {}", f.field, f.message))
            .collect();
        lines.join("; ")
    })
}
