//! Matching a request's `Origin` against the configured origins, by Kong's rules.

use http::HeaderValue;
use regex::Regex;

/// One configured origin.
pub enum Rule {
    /// `*` inside a longer list: every origin is allowed.
    Any,
    /// A plain origin, normalized (`scheme://host[:port]`, default ports dropped).
    Exact(String),
    /// A regex, anchored at both ends; `by_host` when it has no `:` (matched against the host only).
    Pattern { re: Regex, by_host: bool },
}

/// The compiled `origins` of one plugin config.
pub enum Origins {
    /// None configured, or just `*`.
    All,
    /// One plain origin: sent as is, whatever the request's origin.
    Fixed(HeaderValue),
    /// Several origins, or one regex.
    List(Vec<Rule>),
}

/// The outcome for one request.
pub enum Allowed {
    /// `Access-Control-Allow-Origin: *`; `vary` when this came from a `*` inside a list (Kong then has
    /// already added `Vary: Origin`).
    All { vary: bool },
    /// Echo this origin.
    Origin(HeaderValue),
    /// No `Access-Control-Allow-Origin`.
    None,
}

impl Allowed {
    /// Whether `Vary: Origin` goes with this answer (everything but a plain allow-all).
    pub fn varies(&self) -> bool {
        !matches!(self, Allowed::All { vary: false })
    }
}

/// Looks like a plain origin rather than a regex (Kong's `^[A-Za-z0-9.:/-]+$`).
fn is_plain(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b':' | b'/' | b'-'))
}

/// An origin's `(domain, host)`: `scheme://host[:port]` without default ports, and the host alone. A value
/// without `scheme://` is its own domain and host.
pub fn normalize(origin: &str) -> (String, String) {
    let Some((scheme, rest)) = origin.split_once("://") else {
        return (origin.to_string(), origin.to_string());
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let authority = authority.rsplit('@').next().unwrap_or(authority);
    let (host, port) = match authority.strip_prefix('[').and_then(|a| a.split_once(']')) {
        Some((v6, rest)) => (&authority[..v6.len() + 2], rest.strip_prefix(':')),
        None => match authority.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        },
    };
    let default_port = matches!(
        (scheme, port),
        ("http", Some("80")) | ("https", Some("443"))
    );
    let port = port.filter(|p| !p.is_empty() && !default_port);
    let domain = match port {
        Some(p) => format!("{scheme}://{host}:{p}"),
        None => format!("{scheme}://{host}"),
    };
    (domain, host.to_string())
}

impl Origins {
    /// Compiles the configured list (regexes were validated by the schema).
    pub fn new(list: &[String]) -> Result<Origins, String> {
        if list.is_empty() || (list.len() == 1 && list[0] == "*") {
            return Ok(Origins::All);
        }
        if list.len() == 1 && is_plain(&list[0]) {
            let v = HeaderValue::from_str(&list[0]).map_err(|e| e.to_string())?;
            return Ok(Origins::Fixed(v));
        }
        let mut rules = Vec::with_capacity(list.len());
        for entry in list {
            rules.push(if entry == "*" {
                Rule::Any
            } else if is_plain(entry) {
                Rule::Exact(normalize(entry).0)
            } else {
                let body = entry.strip_prefix('^').unwrap_or(entry);
                let body = body.strip_suffix('$').unwrap_or(body);
                let re = Regex::new(&format!("^(?:{body})$")).map_err(|e| e.to_string())?;
                Rule::Pattern {
                    re,
                    by_host: !entry.contains(':'),
                }
            });
        }
        Ok(Origins::List(rules))
    }

    /// What to answer a request with this `Origin` (None: absent or not text).
    pub fn check(&self, origin: Option<&str>) -> Allowed {
        let rules = match self {
            Origins::All => return Allowed::All { vary: false },
            Origins::Fixed(v) => return Allowed::Origin(v.clone()),
            Origins::List(rules) => rules,
        };
        let Some(origin) = origin.filter(|o| !o.is_empty()) else {
            return Allowed::None;
        };
        if rules.iter().any(|r| matches!(r, Rule::Any)) {
            return Allowed::All { vary: true };
        }
        let (domain, host) = normalize(origin);
        let found = rules.iter().any(|rule| match rule {
            Rule::Any => true,
            Rule::Exact(d) => *d == domain,
            Rule::Pattern { re, by_host } => re.is_match(if *by_host { &host } else { &domain }),
        });
        match found.then(|| HeaderValue::from_str(&domain).ok()).flatten() {
            Some(v) => Allowed::Origin(v),
            None => Allowed::None,
        }
    }
}
