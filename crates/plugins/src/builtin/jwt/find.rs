//! Where a request carries its JWT, in Kong's order: query arguments (`uri_param_names`), cookies
//! (`cookie_names`), then headers (`header_names`, the text after `Bearer `). Every distinct value found
//! counts; more than one is Kong's "Multiple tokens provided".

use http::HeaderMap;
use percent_encoding::percent_decode_str;
use std::borrow::Cow;

/// One value found (borrowed from the request when it is there as Kong reads it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found<'r> {
    Text(Cow<'r, str>),
    /// A query argument without `=` (`?jwt`): Kong reads it as `true`, an "Unrecognizable token".
    Flag,
}

/// What the request holds.
#[derive(Debug, PartialEq, Eq)]
pub enum Tokens<'r> {
    None,
    One(Found<'r>),
    Many,
}

/// Gathers distinct values; a request holds few, so a vector is the set.
#[derive(Default)]
struct Set<'r>(Vec<Found<'r>>);

impl<'r> Set<'r> {
    fn add(&mut self, found: Found<'r>) {
        if found != Found::Text(Cow::Borrowed("")) && !self.0.contains(&found) {
            self.0.push(found);
        }
    }
}

/// A query argument's name or value as Kong decodes it (`+` is a space, then percent-decoding).
fn decode(text: &str) -> String {
    let spaced = text.replace('+', " ");
    percent_decode_str(&spaced).decode_utf8_lossy().into_owned()
}

/// The text after the first `[Bb]earer` followed by whitespace and at least one character, as Kong's
/// unanchored `\s*[Bb]earer\s+(.+)`.
pub fn bearer(value: &[u8]) -> Option<&[u8]> {
    let ws = |b: &u8| matches!(b, b' ' | b'\t' | b'\n' | b'\x0b' | b'\x0c' | b'\r');
    (0..value.len()).find_map(|i| {
        let rest = value.get(i..)?;
        let after = rest
            .strip_prefix(b"Bearer")
            .or_else(|| rest.strip_prefix(b"bearer"))?;
        let spaces = after.iter().take_while(|b| ws(b)).count();
        match (spaces, after.len() - spaces) {
            (0, _) | (1, 0) => None,
            (_, 0) => Some(&after[spaces - 1..]),
            _ => Some(&after[spaces..]),
        }
    })
}

/// The tokens in a request.
pub fn tokens<'r>(
    query: Option<&str>,
    headers: &'r HeaderMap,
    uri_params: &[String],
    cookies: &[String],
    header_names: &[http::HeaderName],
) -> Tokens<'r> {
    let mut set = Set::default();
    if let Some(query) = query.filter(|_| !uri_params.is_empty()) {
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (name, value) = match pair.split_once('=') {
                Some((n, v)) => (n, Some(v)),
                None => (pair, None),
            };
            if uri_params.iter().any(|p| *p == decode(name)) {
                set.add(value.map_or(Found::Flag, |v| Found::Text(decode(v).into())));
            }
        }
    }
    for name in cookies {
        if let Some(v) = super::super::auth::cookie(headers, name) {
            set.add(Found::Text(v.into()));
        }
    }
    for name in header_names {
        if let Some(token) = headers.get(name).and_then(|v| bearer(v.as_bytes())) {
            set.add(Found::Text(String::from_utf8_lossy(token)));
        }
    }
    match set.0.len() {
        0 => Tokens::None,
        1 => Tokens::One(set.0.remove(0)),
        _ => Tokens::Many,
    }
}
