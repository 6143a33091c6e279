//! Per-field matching of one compiled route: methods, hosts, headers, SNIs and paths.

use crate::host::{split_host_port, HostMatcher, NameMatcher};
use crate::{Captures, RouteSpec};
use regex::Regex;
use std::borrow::Cow;

/// What the router looks at in a request. Borrowed: building it costs nothing.
pub struct RequestParts<'a> {
    pub method: &'a str,
    /// The Host header (or `:authority`) as received, possibly with `:port`.
    pub host: &'a str,
    /// The port the request came in on: what a route host with a port is compared with when `host` has none.
    pub port: u16,
    /// The normalized path, without the query string: escapes of ASCII characters that are not reserved
    /// decoded, escapes of non-ASCII bytes kept (the router decodes those, as Kong does).
    pub path: &'a str,
    pub headers: &'a http::HeaderMap,
    /// The TLS server name, for https requests.
    pub sni: Option<&'a str>,
}

/// The request as every route sees it: the path decoded once per request.
#[derive(Clone, Copy)]
pub(crate) struct Input<'a> {
    pub req: &'a RequestParts<'a>,
    /// The path with escapes of non-ASCII bytes decoded (see [`crate::path`]).
    pub path: &'a str,
    /// Whether `path` differs from `req.path` (then match lengths are mapped back).
    pub decoded: bool,
}

impl<'a> Input<'a> {
    /// `path` is `req.path` as [`crate::path::decode`] returned it.
    pub fn new(req: &'a RequestParts<'a>, path: &'a Cow<'a, str>) -> Input<'a> {
        Input {
            req,
            path,
            decoded: matches!(path, Cow::Owned(_)),
        }
    }
}

/// One accepted header value. Kong compares lower-cased values: the route's is lowered here, once; a regex
/// is lowered too (as Kong does, so `\D` becomes `\d`) and runs on the lowered request value.
pub(crate) enum ValueMatcher {
    Text(String),
    Regex(Regex),
}

pub(crate) enum PathMatcher {
    /// Shared with the router's prefix index (no copy per router build).
    Prefix(std::sync::Arc<str>),
    Regex(Regex),
}

/// One route compiled; it does not know the caller's index, so a later router can reuse it unchanged.
pub(crate) struct CompiledRoute {
    pub methods: Vec<String>,
    pub hosts: Vec<HostMatcher>,
    pub headers: Vec<(http::HeaderName, Vec<ValueMatcher>)>,
    pub snis: Vec<NameMatcher>,
    pub paths: Vec<PathMatcher>,
    pub regex_priority: i64,
    pub uuid: u128,
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
                None => paths.push(PathMatcher::Prefix(p.as_str().into())),
            }
        }
        let mut headers = Vec::new();
        for (name, values) in &spec.headers {
            let Ok(header) = http::HeaderName::from_bytes(&header_key(name)) else {
                errors.push(format!("invalid header name '{name}'"));
                continue;
            };
            let mut matchers = Vec::new();
            for v in values {
                let lower = v.to_ascii_lowercase();
                match lower.strip_prefix("~*") {
                    Some(re) => match Regex::new(re) {
                        Ok(r) => matchers.push(ValueMatcher::Regex(r)),
                        Err(e) => errors.push(format!("invalid regex for header '{name}': {e}")),
                    },
                    None => matchers.push(ValueMatcher::Text(lower)),
                }
            }
            headers.push((header, matchers));
        }
        if !errors.is_empty() {
            return Err(errors);
        }
        Ok(CompiledRoute {
            methods: spec.methods.clone(),
            hosts: spec.hosts.iter().map(|h| HostMatcher::new(h)).collect(),
            headers,
            snis: spec.snis.iter().map(|s| NameMatcher::sni(s)).collect(),
            paths,
            regex_priority: spec.regex_priority,
            uuid: spec.uuid,
        })
    }

    /// Kong's "plain host only" bit: the route has hosts and none is a wildcard. A route without hosts does
    /// not have it, so it ties with a wildcard-host route of the same field count.
    pub fn plain_hosts_only(&self) -> bool {
        !self.hosts.is_empty() && !self.hosts.iter().any(HostMatcher::is_wildcard)
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

    /// Everything but the path. SNIs are checked only when the request has one (Kong ignores them for
    /// plain http).
    pub fn matches_non_path(&self, input: &Input<'_>) -> bool {
        let req = input.req;
        (self.methods.is_empty() || self.methods.iter().any(|m| m == req.method))
            && (self.hosts.is_empty() || {
                // Split here, not per request: most candidates tried have no hosts.
                let (host, port) = split_host_port(req.host);
                let port = port.unwrap_or(req.port);
                self.hosts.iter().any(|h| h.matches(host, port))
            })
            && self.headers.iter().all(|(name, values)| {
                req.headers.get_all(name).iter().any(|v| {
                    let Ok(v) = v.to_str() else { return false };
                    values.iter().any(|m| m.matches(v))
                })
            })
            && (self.snis.is_empty()
                || req
                    .sni
                    .is_none_or(|sni| self.snis.iter().any(|s| s.matches(sni))))
    }
}

impl PathMatcher {
    /// The matched length at the start of `path`, and captures for regexes.
    pub fn matches(&self, path: &str) -> Option<(usize, Option<Captures>)> {
        match self {
            PathMatcher::Prefix(p) => path.starts_with(&**p).then_some((p.len(), None)),
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
            ValueMatcher::Text(t) => t.eq_ignore_ascii_case(value),
            ValueMatcher::Regex(r) => {
                let lower = if value.bytes().any(|b| b.is_ascii_uppercase()) {
                    Cow::Owned(value.to_ascii_lowercase())
                } else {
                    Cow::Borrowed(value)
                };
                r.is_match(&lower)
            }
        }
    }
}

/// A route's header name as the request header it reads: Kong reads nginx's `$http_*` variables, so the
/// name is lower-cased and `_` stands for `-` (`user_agent` and `USER-AGENT` both mean `user-agent`).
pub(crate) fn header_key(name: &str) -> Vec<u8> {
    name.bytes()
        .map(|b| match b {
            b'_' => b'-',
            b => b.to_ascii_lowercase(),
        })
        .collect()
}
