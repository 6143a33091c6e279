//! Kong's DNS settings (`dns_resolver`, `dns_hostsfile`, `dns_order`, `dns_valid_ttl`, `dns_stale_ttl`,
//! `dns_not_found_ttl`, `dns_error_ttl`), parsed from their `kong.conf` text with Kong's defaults.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

/// A record type of `dns_order`; `Last` stands for the type that last succeeded for the name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Last,
    Srv,
    A,
    Aaaa,
    Cname,
}

/// How names are resolved and how long answers are kept. Build with `..DnsSettings::default()`.
#[derive(Debug, Clone, PartialEq)]
pub struct DnsSettings {
    /// Nameservers to ask (Kong's `dns_resolver`); empty means those of `/etc/resolv.conf`.
    pub resolvers: Vec<SocketAddr>,
    /// Names answered without DNS (Kong's `dns_hostsfile`), read once at start.
    pub hostsfile: PathBuf,
    /// Record types tried in turn (Kong's `dns_order`).
    pub order: Vec<Kind>,
    /// Replaces every record's TTL when set (Kong's `dns_valid_ttl`).
    pub valid_ttl: Option<Duration>,
    /// How long a background refresh of an expired answer may take before another is started; the
    /// expired answer serves requests meanwhile (`dns_stale_ttl`).
    pub stale_ttl: Duration,
    /// How long "no such name" and empty answers are remembered (`dns_not_found_ttl`).
    pub not_found_ttl: Duration,
    /// How long failed lookups (timeouts, server errors) are remembered (`dns_error_ttl`).
    pub error_ttl: Duration,
}

impl Default for DnsSettings {
    /// Kong's defaults.
    fn default() -> Self {
        DnsSettings {
            resolvers: Vec::new(),
            hostsfile: PathBuf::from("/etc/hosts"),
            order: vec![Kind::Last, Kind::Srv, Kind::A, Kind::Cname],
            valid_ttl: None,
            stale_ttl: Duration::from_secs(4),
            not_found_ttl: Duration::from_secs(30),
            error_ttl: Duration::from_secs(1),
        }
    }
}

impl DnsSettings {
    /// The settings from their `kong.conf` text: `value(name)` is the text of setting `name` when set.
    /// Errors name the setting.
    pub fn from_kong(value: impl Fn(&str) -> Option<String>) -> Result<DnsSettings, String> {
        let mut dns = DnsSettings::default();
        let named = |name: &str, e: String| format!("{name}: {e}");
        if let Some(v) = value("dns_resolver") {
            dns.resolvers = parse_resolvers(&v).map_err(|e| named("dns_resolver", e))?;
        }
        if let Some(v) = value("dns_hostsfile") {
            dns.hostsfile = PathBuf::from(v);
        }
        if let Some(v) = value("dns_order") {
            dns.order = parse_order(&v).map_err(|e| named("dns_order", e))?;
        }
        if let Some(v) = value("dns_valid_ttl") {
            dns.valid_ttl = Some(parse_seconds(&v).map_err(|e| named("dns_valid_ttl", e))?);
        }
        for (name, field) in [
            ("dns_stale_ttl", &mut dns.stale_ttl),
            ("dns_not_found_ttl", &mut dns.not_found_ttl),
            ("dns_error_ttl", &mut dns.error_ttl),
        ] {
            if let Some(v) = value(name) {
                *field = parse_seconds(&v).map_err(|e| named(name, e))?;
            }
        }
        Ok(dns)
    }

    /// The settings as Kong's `GET /` `configuration` object shows them.
    pub fn to_json(&self) -> serde_json::Value {
        let order: Vec<&str> = self
            .order
            .iter()
            .map(|k| match k {
                Kind::Last => "LAST",
                Kind::Srv => "SRV",
                Kind::A => "A",
                Kind::Aaaa => "AAAA",
                Kind::Cname => "CNAME",
            })
            .collect();
        serde_json::json!({
            "dns_resolver": self.resolvers.iter().map(ToString::to_string).collect::<Vec<_>>(),
            "dns_hostsfile": self.hostsfile,
            "dns_order": order,
            "dns_valid_ttl": self.valid_ttl.map(|d| d.as_secs_f64()),
            "dns_stale_ttl": self.stale_ttl.as_secs_f64(),
            "dns_not_found_ttl": self.not_found_ttl.as_secs_f64(),
            "dns_error_ttl": self.error_ttl.as_secs_f64(),
        })
    }
}

/// Parses `dns_resolver`: a comma list of `ip[:port]` (IPv6 as `[ip]:port` or bare), port 53 by default.
pub fn parse_resolvers(value: &str) -> Result<Vec<SocketAddr>, String> {
    let mut out = Vec::new();
    for item in value.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let addr = match item.parse::<SocketAddr>() {
            Ok(addr) => addr,
            Err(_) => match item
                .trim_start_matches('[')
                .trim_end_matches(']')
                .parse::<IpAddr>()
            {
                Ok(ip) => SocketAddr::new(ip, 53),
                Err(_) => return Err(format!("'{item}' is not an ip[:port]")),
            },
        };
        out.push(addr);
    }
    Ok(out)
}

/// Parses `dns_order`: a case-insensitive comma list of `LAST`, `SRV`, `A`, `AAAA`, `CNAME`.
pub fn parse_order(value: &str) -> Result<Vec<Kind>, String> {
    let mut out = Vec::new();
    for item in value.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let kind = match item.to_ascii_uppercase().as_str() {
            "LAST" => Kind::Last,
            "SRV" => Kind::Srv,
            "A" => Kind::A,
            "AAAA" => Kind::Aaaa,
            "CNAME" => Kind::Cname,
            _ => return Err(format!("unknown record type '{item}'")),
        };
        if !out.contains(&kind) {
            out.push(kind);
        }
    }
    match out.iter().any(|k| *k != Kind::Last) {
        true => Ok(out),
        false => Err("needs at least one of SRV, A, AAAA, CNAME".into()),
    }
}

/// Parses a TTL setting in seconds (fractions allowed, as Kong's are numbers).
pub fn parse_seconds(value: &str) -> Result<Duration, String> {
    value
        .trim()
        .parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s >= 0.0)
        .map(Duration::from_secs_f64)
        .ok_or_else(|| format!("expected a number of seconds, got '{value}'"))
}
