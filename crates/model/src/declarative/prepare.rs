//! Per-kind steps around schema validation: the service `url` shorthand, target normalization, a
//! plugin's own default `protocols`, plugin configs, and basic-auth password hashing. (Generated
//! credential values are filled after hashing, in `typed::Assembler::add`.)

use super::kinds::Kind;
use crate::schema::FieldError;
use crate::PluginRegistry;
use serde_json::{Map, Value};
use sha1::{Digest, Sha1};

/// Adjusts an entity's raw value before validation.
pub fn before_validation(
    kind: Kind,
    value: &mut Map<String, Value>,
    registry: &dyn PluginRegistry,
    errors: &mut Vec<FieldError>,
) {
    match kind {
        Kind::Service => {
            if let Some(url) = value.remove("url") {
                match url.as_str().map(split_url) {
                    Some(Ok(parts)) => {
                        for (k, v) in parts {
                            value.insert(k.into(), v);
                        }
                    }
                    Some(Err(msg)) => errors.push(FieldError::new("url", msg)),
                    None if url.is_null() => {}
                    None => errors.push(FieldError::new("url", "expected a string")),
                }
            }
            if !value.contains_key("port") {
                let https = matches!(
                    value.get("protocol").and_then(|p| p.as_str()),
                    Some("https" | "grpcs" | "tls" | "wss")
                );
                value.insert("port".into(), if https { 443 } else { 80 }.into());
            }
        }
        Kind::Upstream => {
            // Kong's two shorthands (`upstreams.lua`), applied in its order to the entity in place:
            // `least-connections` and `latency` set `hash_on` to null; then `hash_on` (as it now stands)
            // decides: null is `none`, `none` means round-robin, any other consistent hashing (so
            // `hash_on: header` alone does not silently round-robin).
            let algorithm = value.get("algorithm").and_then(Value::as_str);
            if matches!(algorithm, Some("least-connections" | "latency")) {
                value.insert("hash_on".into(), Value::Null);
            }
            match value.get("hash_on") {
                None => {}
                Some(Value::Null) => {
                    value.insert("hash_on".into(), "none".into());
                }
                Some(h) => {
                    let algorithm = if h == "none" {
                        "round-robin"
                    } else {
                        "consistent-hashing"
                    };
                    value.insert("algorithm".into(), algorithm.into());
                }
            }
        }
        Kind::Plugin => own_protocols(value, registry),
        Kind::Target => {
            if let Some(Value::String(t)) = value.get("target") {
                match normalize_target(t) {
                    Ok(n) => {
                        value.insert("target".into(), n.into());
                    }
                    Err(msg) => errors.push(FieldError::new("target", msg)),
                }
            }
        }
        _ => {}
    }
}

/// A plugin entity without `protocols` (absent or null) gets its plugin's own default, when the plugin's
/// schema has one (Kong's schemas override the plugin entity's default field by field); the entity
/// schema's default applies otherwise.
fn own_protocols(value: &mut Map<String, Value>, registry: &dyn PluginRegistry) {
    if !value.get("protocols").is_none_or(Value::is_null) {
        return;
    }
    let name = value
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if let Some(own) = registry.plugin(name).and_then(|def| def.protocols) {
        value.insert("protocols".into(), own.into());
    }
}

/// `scheme://host[:port][/path]` → protocol, host, port, path.
fn split_url(url: &str) -> Result<Vec<(&'static str, Value)>, String> {
    let bad = || format!("invalid url: {url}");
    let (scheme, rest) = url.split_once("://").ok_or_else(bad)?;
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], Some(&rest[i..])),
        None => (rest, None),
    };
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let (h, after) = v6.split_once(']').ok_or_else(bad)?;
        (h, after.strip_prefix(':'))
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        }
    };
    if host.is_empty() {
        return Err(bad());
    }
    let mut out = vec![
        ("protocol", Value::from(scheme.to_ascii_lowercase())),
        ("host", Value::from(host)),
    ];
    match port {
        Some(p) => out.push(("port", Value::from(p.parse::<u16>().map_err(|_| bad())?))),
        None => out.push((
            "port",
            Value::from(if matches!(scheme, "https" | "grpcs" | "wss" | "tls") {
                443
            } else {
                80
            }),
        )),
    }
    if let Some(p) = path.filter(|p| !p.is_empty()) {
        out.push(("path", Value::from(p)));
    }
    Ok(out)
}

/// `host[:port]` with the default port 8000; IPv6 in brackets.
fn normalize_target(t: &str) -> Result<String, String> {
    let t = t.trim();
    if let Ok(ip) = t.parse::<std::net::Ipv6Addr>() {
        return Ok(format!("[{ip}]:8000"));
    }
    if let Ok(sa) = t.parse::<std::net::SocketAddr>() {
        return Ok(sa.to_string());
    }
    let (host, port) = match t.rsplit_once(':') {
        Some((h, p)) => (
            h,
            p.parse::<u16>().map_err(|_| {
                format!("Invalid target ('{t}'); not a valid hostname or ip address")
            })?,
        ),
        None => (t, 8000),
    };
    let valid = !host.is_empty()
        && host.split('.').all(|l| {
            !l.is_empty()
                && l.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        });
    if !valid {
        return Err(format!(
            "Invalid target ('{t}'); not a valid hostname or ip address"
        ));
    }
    Ok(format!("{host}:{port}"))
}

/// Validates a plugin's `config` against the plugin's schema (defaults filled) and its scoping rules.
pub fn plugin_config(
    plugin: &mut Value,
    registry: &dyn PluginRegistry,
    errors: &mut Vec<FieldError>,
) {
    let name = plugin["name"].as_str().unwrap_or_default().to_string();
    let Some(def) = registry.plugin(&name) else {
        errors.push(FieldError::new(
            "name",
            format!("plugin '{name}' not enabled; add it to the 'plugins' configuration property"),
        ));
        return;
    };
    for (field, forbidden) in [
        ("consumer", def.no_consumer),
        ("route", def.no_route),
        ("service", def.no_service),
    ] {
        if forbidden && !plugin[field].is_null() {
            errors.push(FieldError::new(field, "value must be null"));
        }
    }
    match def.config.validate(&plugin["config"]) {
        Ok(config) => plugin["config"] = config,
        Err(errs) => errors.extend(errs.into_iter().map(|e| e.nested("config"))),
    }
}

/// Kong's `_transform` for basic-auth: the stored password is `sha1(password .. consumer_id)` in hex.
pub fn hash_password(cred: &mut Value) {
    let password = cred["password"].as_str().unwrap_or_default();
    let consumer = cred["consumer"]["id"].as_str().unwrap_or_default();
    let mut h = Sha1::new();
    h.update(password.as_bytes());
    h.update(consumer.as_bytes());
    cred["password"] = h
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect::<String>()
        .into();
}
