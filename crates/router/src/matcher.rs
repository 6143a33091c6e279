//! Per-field matching of one compiled route: methods, hosts, headers, SNIs and paths.

use crate::{Captures, RouteSpec};
use regex::Regex;

/// What the router looks at in a request. Borrowed: building it costs nothing.
pub struct RequestParts<'a> {
    pub method: &'a str,
    /// The Host header (or `:authority`) as received, possibly with `:port`.
    pub host: &'a str,
    /// The raw path, without the query string.
    pub path: &'a str,
    pub headers: &'a http::HeaderMap,
    /// The TLS server name, for https requests.
    pub sni: Option<&'a str>,
}

pub(crate) enum HostMatcher {
    /// Lower-case host, with the port when the route named one.
    Exact { host: String, port: Option<u16> },
    /// `*.example.com`: the request host ends with `.example.com`.
    Suffix { suffix: String, port: Option<u16> },
    /// `example.*`: the request host starts with `example.`.
    Prefix { prefix: String, port: Option<u16> },
}

pub(crate) enum ValueMatcher {
    Text(String),
    Regex(Regex),
}

pub(crate) enum PathMatcher {
    Prefix(String),
    Regex(Regex),
}

pub(crate) struct CompiledRoute {
    pub id: usize,
    pub methods: Vec<String>,
    pub hosts: Vec<HostMatcher>,
    pub headers: Vec<(http::HeaderName, Vec<ValueMatcher>)>,
    pub snis: Vec<String>,
    pub paths: Vec<PathMatcher>,
    pub regex_priority: i64,
    pub created_order: u64,
}

impl CompiledRoute {
    pub fn compile(spec: &RouteSpec) -> Result<CompiledRoute, Vec<String>> {
        let mut errors = Vec::new();
        let mut paths = Vec::new();
        for p in &spec.paths {
            match p.strip_prefix('~') {
                Some(re) => match Regex::new(&format!("^(?:{re})")) {
                    Ok(r) => paths.push(PathMatcher::Regex(r)),
                    Err(e) => errors.push(format!("invalid regex path '{p}': {e}")),
                },
                None => paths.push(PathMatcher::Prefix(p.clone())),
            }
        }
        let mut headers = Vec::new();
        for (name, values) in &spec.headers {
            let Ok(header) = http::HeaderName::from_bytes(name.to_ascii_lowercase().as_bytes())
            else {
                errors.push(format!("invalid header name '{name}'"));
                continue;
            };
            let mut matchers = Vec::new();
            for v in values {
                match v.strip_prefix("~*") {
                    Some(re) => match Regex::new(&format!("(?i){re}")) {
                        Ok(r) => matchers.push(ValueMatcher::Regex(r)),
                        Err(e) => errors.push(format!("invalid regex for header '{name}': {e}")),
                    },
                    None => matchers.push(ValueMatcher::Text(v.clone())),
                }
            }
            headers.push((header, matchers));
        }
        if !errors.is_empty() {
            return Err(errors);
        }
        Ok(CompiledRoute {
            id: spec.id,
            methods: spec.methods.clone(),
            hosts: spec.hosts.iter().map(|h| host_matcher(h)).collect(),
            headers,
            snis: spec.snis.iter().map(|s| s.to_ascii_lowercase()).collect(),
            paths,
            regex_priority: spec.regex_priority,
            created_order: spec.created_order,
        })
    }

    pub fn has_wildcard_host(&self) -> bool {
        self.hosts
            .iter()
            .any(|h| !matches!(h, HostMatcher::Exact { .. }))
    }

    /// How many kinds of fields the route matches on (Kong's first priority rule).
    pub fn field_count(&self) -> u32 {
        [
            !self.methods.is_empty(),
            !self.hosts.is_empty(),
            !self.headers.is_empty(),
            !self.paths.is_empty(),
            !self.snis.is_empty(),
        ]
        .iter()
        .filter(|b| **b)
        .count() as u32
    }

    /// Everything but the path.
    pub fn matches_non_path(&self, req: &RequestParts<'_>) -> bool {
        (self.methods.is_empty() || self.methods.iter().any(|m| m == req.method))
            && (self.hosts.is_empty() || self.hosts.iter().any(|h| h.matches(req.host)))
            && self.headers.iter().all(|(name, values)| {
                req.headers.get_all(name).iter().any(|v| {
                    let Ok(v) = v.to_str() else { return false };
                    values.iter().any(|m| m.matches(v))
                })
            })
            && (self.snis.is_empty()
                || req
                    .sni
                    .is_none_or(|sni| self.snis.iter().any(|s| s.eq_ignore_ascii_case(sni))))
    }
}

impl PathMatcher {
    /// The matched length at the start of `path`, and captures for regexes.
    pub fn matches(&self, path: &str) -> Option<(usize, Option<Captures>)> {
        match self {
            PathMatcher::Prefix(p) => path.starts_with(p.as_str()).then_some((p.len(), None)),
            PathMatcher::Regex(re) => {
                let caps = re.captures(path)?;
                let len = caps.get(0).map_or(0, |m| m.end());
                let unnamed = caps
                    .iter()
                    .map(|m| m.map(|m| m.as_str().to_string()))
                    .collect();
                let named = re
                    .capture_names()
                    .flatten()
                    .filter_map(|n| {
                        caps.name(n)
                            .map(|m| (n.to_string(), m.as_str().to_string()))
                    })
                    .collect();
                Some((len, Some(Captures { unnamed, named })))
            }
        }
    }
}

impl ValueMatcher {
    fn matches(&self, value: &str) -> bool {
        match self {
            ValueMatcher::Text(t) => t.eq_ignore_ascii_case(value.trim()),
            ValueMatcher::Regex(r) => r.is_match(value),
        }
    }
}

fn split_port(host: &str) -> (&str, Option<u16>) {
    if let Some(rest) = host.strip_prefix('[') {
        // [v6]:port
        return match rest.split_once(']') {
            Some((h, after)) => (h, after.strip_prefix(':').and_then(|p| p.parse().ok())),
            None => (host, None),
        };
    }
    match host.rsplit_once(':') {
        Some((h, p)) if !h.contains(':') => match p.parse() {
            Ok(port) => (h, Some(port)),
            Err(_) => (host, None),
        },
        _ => (host, None),
    }
}

fn host_matcher(h: &str) -> HostMatcher {
    let lower = h.to_ascii_lowercase();
    let (name, port) = split_port(&lower);
    if let Some(suffix) = name.strip_prefix('*') {
        HostMatcher::Suffix {
            suffix: suffix.to_string(),
            port,
        }
    } else if let Some(prefix) = name.strip_suffix('*') {
        HostMatcher::Prefix {
            prefix: prefix.to_string(),
            port,
        }
    } else {
        HostMatcher::Exact {
            host: name.to_string(),
            port,
        }
    }
}

fn starts_with_ci(s: &str, prefix: &str) -> bool {
    s.len() >= prefix.len() && s.as_bytes()[..prefix.len()].eq_ignore_ascii_case(prefix.as_bytes())
}

fn ends_with_ci(s: &str, suffix: &str) -> bool {
    s.len() >= suffix.len()
        && s.as_bytes()[s.len() - suffix.len()..].eq_ignore_ascii_case(suffix.as_bytes())
}

impl HostMatcher {
    fn matches(&self, request_host: &str) -> bool {
        let (name, req_port) = split_port(request_host);
        let port_ok = |port: &Option<u16>| port.is_none() || *port == req_port;
        match self {
            HostMatcher::Exact { host, port } => port_ok(port) && name.eq_ignore_ascii_case(host),
            HostMatcher::Suffix { suffix, port } => {
                port_ok(port) && name.len() > suffix.len() && ends_with_ci(name, suffix)
            }
            HostMatcher::Prefix { prefix, port } => {
                port_ok(port) && name.len() > prefix.len() && starts_with_ci(name, prefix)
            }
        }
    }
}
