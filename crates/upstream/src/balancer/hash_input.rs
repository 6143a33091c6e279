//! What consistent hashing hashes: the request facts a pick may need ([`PickInput`]) and Kong's
//! `hash_on` / `hash_fallback` choice of one of them.

use super::ring::hash64;
use http::header::{HeaderMap, HeaderName, COOKIE};
use sluice_model::Upstream;
use sluice_router::Captures;
use std::borrow::Cow;
use std::net::IpAddr;

/// The request facts a balancer may hash on. Only consistent hashing reads them; other algorithms pick
/// from [`PickInput::default`] just as well.
#[derive(Debug, Clone, Copy, Default)]
pub struct PickInput<'a> {
    /// The client address (after `trusted_ips` / real-ip processing).
    pub client_ip: Option<IpAddr>,
    pub headers: Option<&'a HeaderMap>,
    /// The authenticated consumer's id.
    pub consumer: Option<&'a str>,
    /// The request path as the client sent it (normalized).
    pub path: &'a str,
    /// The raw query string, without `?`.
    pub query: Option<&'a str>,
    /// The matched route's regex captures.
    pub captures: Option<&'a Captures>,
}

/// One hash source (`hash_on` or `hash_fallback` with its companion field).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HashOn {
    None,
    Consumer,
    Ip,
    Header(HeaderName),
    /// A cookie; when the request has none, a value is made up and set on the response.
    Cookie {
        name: String,
        path: String,
    },
    Path,
    QueryArg(String),
    UriCapture(String),
}

impl HashOn {
    /// `kind` as in Kong's `hash_on`, with the companion field it names.
    fn new(
        kind: &str,
        header: Option<&str>,
        query_arg: Option<&str>,
        capture: Option<&str>,
    ) -> Self {
        let text = |v: Option<&str>| v.unwrap_or_default().to_string();
        match kind {
            "consumer" => HashOn::Consumer,
            "ip" => HashOn::Ip,
            "header" => header
                .and_then(|h| HeaderName::from_bytes(h.as_bytes()).ok())
                .map_or(HashOn::None, HashOn::Header),
            "path" => HashOn::Path,
            "query_arg" => HashOn::QueryArg(text(query_arg)),
            "uri_capture" => HashOn::UriCapture(text(capture)),
            _ => HashOn::None,
        }
    }

    /// The value to hash, or None when the request lacks it.
    fn value<'a>(&self, input: &PickInput<'a>) -> Option<Cow<'a, str>> {
        match self {
            HashOn::None => None,
            HashOn::Consumer => input.consumer.map(Cow::Borrowed),
            HashOn::Ip => input.client_ip.map(|ip| Cow::Owned(ip.to_string())),
            HashOn::Header(name) => joined(
                input
                    .headers?
                    .get_all(name)
                    .iter()
                    .filter_map(|v| v.to_str().ok()),
            ),
            HashOn::Cookie { name, .. } => cookie(input.headers?, name).map(Cow::Borrowed),
            HashOn::Path => Some(Cow::Borrowed(input.path)),
            HashOn::QueryArg(arg) => joined(
                input
                    .query?
                    .split('&')
                    .filter_map(|kv| kv.split_once('=').or(Some((kv, ""))))
                    .filter(|(k, _)| k == arg)
                    .map(|(_, v)| v),
            ),
            HashOn::UriCapture(name) => {
                let c = input.captures?;
                let named = c.named.iter().find(|(n, _)| n == name).map(|(_, v)| v);
                let numbered = || {
                    name.parse::<usize>()
                        .ok()
                        .and_then(|i| c.unnamed.get(i)?.as_ref())
                };
                named.or_else(numbered).map(|v| Cow::Owned(v.clone()))
            }
        }
    }
}

/// Several values of one name joined with `,` (Kong hashes multi-valued headers and args that way).
fn joined<'a>(mut values: impl Iterator<Item = &'a str>) -> Option<Cow<'a, str>> {
    let first = values.next()?;
    Some(values.fold(Cow::Borrowed(first), |acc, v| {
        Cow::Owned(format!("{acc},{v}"))
    }))
}

/// The value of cookie `name` in the request's `Cookie` headers.
fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}

/// An upstream's `hash_on` and `hash_fallback`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HashKey {
    pub on: HashOn,
    pub fallback: HashOn,
}

/// The hash value of a request, and the cookie to set when it was made up.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Hashed {
    pub value: Option<u64>,
    /// A `Set-Cookie` header value for the response (hash_on cookie, cookie absent).
    pub set_cookie: Option<String>,
}

impl HashKey {
    /// No hashing (`hash_on: none`): picks walk the ring in turn.
    #[cfg(test)]
    pub fn none() -> HashKey {
        HashKey {
            on: HashOn::None,
            fallback: HashOn::None,
        }
    }

    /// The hash settings of `u`.
    pub fn of(u: &Upstream) -> HashKey {
        let on = match u.hash_on.as_str() {
            "cookie" => HashOn::Cookie {
                name: u.hash_on_cookie.clone().unwrap_or_default(),
                path: u.hash_on_cookie_path.clone(),
            },
            kind => HashOn::new(
                kind,
                u.hash_on_header.as_deref(),
                u.hash_on_query_arg.as_deref(),
                u.hash_on_uri_capture.as_deref(),
            ),
        };
        let fallback = HashOn::new(
            &u.hash_fallback,
            u.hash_fallback_header.as_deref(),
            u.hash_fallback_query_arg.as_deref(),
            u.hash_fallback_uri_capture.as_deref(),
        );
        HashKey { on, fallback }
    }

    /// Hashes the request's `hash_on` value, else its `hash_fallback` value; a missing cookie is made up.
    pub fn hash(&self, input: &PickInput<'_>) -> Hashed {
        if let Some(v) = self.on.value(input).or_else(|| self.fallback.value(input)) {
            return Hashed {
                value: Some(hash64(v.as_bytes())),
                set_cookie: None,
            };
        }
        match &self.on {
            HashOn::Cookie { name, path } => {
                let id = crate::request_id::next();
                let value = crate::request_id::as_str(&id);
                Hashed {
                    value: Some(hash64(value.as_bytes())),
                    set_cookie: Some(format!("{name}={value}; Path={path}")),
                }
            }
            _ => Hashed::default(),
        }
    }
}

#[cfg(test)]
mod tests;
