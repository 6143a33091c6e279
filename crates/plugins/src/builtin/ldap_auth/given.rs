//! ldap-auth's reading of a request's credentials: `<header_type> base64(username:password)` from
//! `Proxy-Authorization`, then `Authorization` (Kong's order), and what the verdict cache already says of them.

use super::{cache, Inner};
use base64::Engine;

/// Credentials read from one header.
pub(super) struct Given {
    pub(super) username: String,
    pub(super) password: String,
    pub(super) key: cache::Key,
}

/// What the cache alone says about a request's credentials.
pub(super) enum Cached {
    Accepted(Given),
    Refused,
    /// These credentials, in Kong's order, need the server (the first has no cached verdict).
    Unknown(Vec<Given>),
}

impl Inner {
    /// `<header_type> base64(username:password)`, the scheme case-insensitive after optional whitespace;
    /// None when the value has another form or the password is empty (so no unauthenticated bind).
    pub(super) fn given(&self, value: &http::HeaderValue) -> Option<Given> {
        let text = value.to_str().ok()?.trim_start();
        let (scheme, rest) = text.split_at_checked(self.header_type.len())?;
        if !scheme.eq_ignore_ascii_case(&self.header_type)
            || !rest.starts_with(|c: char| c.is_ascii_whitespace())
        {
            return None;
        }
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(rest.trim())
            .ok()?;
        let decoded = String::from_utf8(decoded).ok()?;
        let (username, password) = decoded.split_once(':')?;
        if password.is_empty() || decoded.contains('\n') {
            return None;
        }
        Some(Given {
            key: cache::key(&self.key_prefix, username, password),
            username: username.to_string(),
            password: password.to_string(),
        })
    }

    /// Kong's order: `Proxy-Authorization`, then `Authorization`.
    pub(super) fn cached(&self, headers: &http::HeaderMap) -> Cached {
        let mut givens = [
            http::header::PROXY_AUTHORIZATION,
            http::header::AUTHORIZATION,
        ]
        .into_iter()
        .filter_map(|name| self.given(headers.get(name)?));
        while let Some(given) = givens.next() {
            match cache::get(&given.key) {
                Some(true) => return Cached::Accepted(given),
                Some(false) => continue,
                None => return Cached::Unknown(std::iter::once(given).chain(givens).collect()),
            }
        }
        Cached::Refused
    }
}
