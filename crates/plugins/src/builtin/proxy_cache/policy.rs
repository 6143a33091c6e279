//! What proxy-cache may store and serve, as Kong decides it: `Cache-Control` directives (read only with
//! `cache_control: true`), the resource's TTL from `s-maxage`/`max-age`/`Expires`, and the exact media type
//! match of `content_type`.

use http::header::{CACHE_CONTROL, EXPIRES};
use http::HeaderMap;

/// The directives of `Cache-Control` lines that proxy-cache reads (Kong's `parse_directive_header`: every
/// `name[=value]` split on `,`; a directive is set whatever its value, a number only when it parses).
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct Directives {
    pub no_store: bool,
    pub no_cache: bool,
    pub private: bool,
    pub only_if_cached: bool,
    pub max_age: Option<f64>,
    pub s_maxage: Option<f64>,
    pub max_stale: Option<f64>,
    pub min_fresh: Option<f64>,
}

impl Directives {
    /// The directives of every `Cache-Control` line in `headers`.
    pub fn of(headers: &HeaderMap) -> Directives {
        let mut d = Directives::default();
        for line in headers.get_all(CACHE_CONTROL) {
            let Ok(line) = line.to_str() else { continue };
            for part in line.split(',') {
                let part = part.trim_start();
                let (name, value) = match part.split_once('=') {
                    Some((n, v)) => (n, Some(v)),
                    None => (part, None),
                };
                let number = || value.and_then(|v| v.trim().parse::<f64>().ok());
                match name.to_ascii_lowercase().as_str() {
                    "no-store" => d.no_store = true,
                    "no-cache" => d.no_cache = true,
                    "private" => d.private = true,
                    "only-if-cached" => d.only_if_cached = true,
                    "max-age" => d.max_age = number(),
                    "s-maxage" => d.s_maxage = number(),
                    "max-stale" => d.max_stale = number(),
                    "min-fresh" => d.min_fresh = number(),
                    _ => {}
                }
            }
        }
        d
    }

    /// Kong's `calculate_resource_ttl`: `s-maxage`, else `max-age`, else `Expires` minus now; never below 0.
    pub fn resource_ttl(&self, headers: &HeaderMap, now: std::time::SystemTime) -> f64 {
        let ttl = self.s_maxage.or(self.max_age).or_else(|| {
            let expires = headers.get_all(EXPIRES).iter().next_back()?.to_str().ok()?;
            let at = httpdate::parse_http_date(expires).ok()?;
            let secs = |t: std::time::SystemTime| {
                t.duration_since(std::time::UNIX_EPOCH)
                    .map_or(0.0, |d| d.as_secs() as f64)
            };
            Some(secs(at) - secs(now).floor())
        });
        ttl.map_or(0.0, |t| t.max(0.0))
    }
}

/// A media type as Kong's `parse_mime_type` reads it: type and subtype lowercased (`*` for a bare `*`),
/// parameters with lowercased names and their values as written.
#[derive(Debug, Clone, PartialEq)]
pub struct Mime {
    kind: String,
    subtype: String,
    params: Vec<(String, String)>,
}

fn is_token(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b > 31 && b < 127 && !b"()<>@,;:\\\"/[]?={} \t".contains(&b))
}

impl Mime {
    /// None for a value that is not a media type (then it matches nothing, as in Kong).
    pub fn parse(s: &str) -> Option<Mime> {
        let mut parts = s.split(';');
        let essence = parts.next()?;
        let (kind, subtype) = match essence.split_once('/') {
            Some((t, st)) if is_token(t) && is_token(st) => {
                (t.to_ascii_lowercase(), st.to_ascii_lowercase())
            }
            None if essence == "*" => ("*".into(), "*".into()),
            _ => return None,
        };
        let mut params = Vec::new();
        for p in parts {
            let (name, value) = p.trim_start_matches([' ', '\t']).split_once('=')?;
            let value = match value.strip_prefix('"') {
                Some(quoted) => quoted.strip_suffix('"')?.to_string(),
                None if is_token(value) => value.to_string(),
                None => return None,
            };
            if !is_token(name) {
                return None;
            }
            params.push((name.to_ascii_lowercase(), value));
        }
        Some(Mime {
            kind,
            subtype,
            params,
        })
    }

    /// Whether the response's media type `actual` is this configured one: type and subtype equal (or
    /// `*`), and the same parameters with the same values.
    pub fn matches(&self, actual: &Mime) -> bool {
        (self.kind == "*" || self.kind == actual.kind)
            && (self.subtype == "*" || self.subtype == actual.subtype)
            && self.params.len() == actual.params.len()
            && self
                .params
                .iter()
                .all(|(k, v)| actual.params.iter().any(|(ak, av)| ak == k && av == v))
    }
}
