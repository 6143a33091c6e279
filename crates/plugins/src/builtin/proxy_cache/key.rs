//! Kong's proxy-cache key, built in `access` for every cacheable request: the SHA-256 (lowercase hex) of
//! `prefix|method|request|params|headers`, where
//! - `prefix` is `consumer_id:route_id` for an authenticated request, else `route_id` (`default` without a
//!   route);
//! - `request` is nginx's `$request` (the request line, `GET /p?q HTTP/1.1`) cut at its first `?`: the line
//!   without a query keeps its ` HTTP/1.1`, as in Kong; lowercased with `ignore_uri_case`;
//! - `params` is `name=value` for the decoded query arguments named in `vary_query_params` (every argument,
//!   sorted by name, when the list is empty), joined with `:`; a repeated argument's values are sorted and
//!   joined with `,`, and an argument without `=` is its bare name;
//! - `headers` is the same for the request headers named in `vary_headers` (none when the list is empty);
//!   names are matched as Kong's header table does (case-insensitive, `_` as `-`).

use crate::builtin::transform::form;
use crate::ctx::RequestCtx;
use http::{HeaderMap, Version};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::fmt::Write;

/// What varies a key besides the request line and the route/consumer (from the plugin's config).
#[derive(Debug, Default)]
pub struct Vary {
    pub query_params: Vec<String>,
    /// As configured (the key spells them so) with the name to look up.
    pub headers: Vec<(String, String)>,
    pub ignore_uri_case: bool,
}

impl Vary {
    pub fn new(query_params: Vec<String>, headers: Vec<String>, ignore_uri_case: bool) -> Vary {
        let headers = headers
            .into_iter()
            .map(|h| {
                let lookup = h.to_ascii_lowercase().replace('_', "-");
                (h, lookup)
            })
            .collect();
        Vary {
            query_params,
            headers,
            ignore_uri_case,
        }
    }
}

/// The text of this request's key, which Kong hashes (what the store is keyed by; [`hex`] gives the
/// `X-Cache-Key`). Built with plain appends: it runs on every hit.
pub fn build(ctx: &RequestCtx<'_>, vary: &Vary) -> String {
    let mut text = String::with_capacity(192);
    let mut id = uuid::Uuid::encode_buffer();
    if let Some(r) = ctx.route {
        if let Some(c) = ctx.consumer {
            text.push_str(c.id.hyphenated().encode_lower(&mut id));
            text.push(':');
        }
        text.push_str(r.id.hyphenated().encode_lower(&mut id));
    } else {
        text.push_str("default");
    }
    let req = &ctx.request;
    let method = req.method.as_str();
    text.push('|');
    text.push_str(method);
    text.push('|');
    let line_start = text.len();
    text.push_str(method);
    text.push(' ');
    match req.uri.path_and_query() {
        Some(pq) if req.uri.authority().is_none() => text.push_str(pq.as_str()),
        _ => {
            let _ = write!(text, "{}", req.uri);
        }
    }
    text.push(' ');
    text.push_str(version(req.version));
    if let Some(q) = text[line_start..].find('?') {
        text.truncate(line_start + q);
    }
    if vary.ignore_uri_case {
        let lowered = text[line_start..].to_lowercase();
        text.truncate(line_start);
        text.push_str(&lowered);
    }
    text.push('|');
    params(&mut text, req.uri.query().unwrap_or(""), &vary.query_params);
    text.push('|');
    headers(&mut text, &req.headers, &vary.headers);
    text
}

/// nginx's spelling of the protocol in `$request`.
fn version(v: Version) -> &'static str {
    match v {
        Version::HTTP_09 => "HTTP/0.9",
        Version::HTTP_10 => "HTTP/1.0",
        Version::HTTP_2 => "HTTP/2.0",
        Version::HTTP_3 => "HTTP/3.0",
        _ => "HTTP/1.1",
    }
}

/// Kong's cache key: the lowercase hex of the SHA-256 of the key's text.
pub fn hex(text: &str) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(64);
    for b in Sha256::digest(text.as_bytes()) {
        out.push(DIGITS[usize::from(b >> 4)] as char);
        out.push(DIGITS[usize::from(b & 15)] as char);
    }
    out
}

/// One `field[=value]` part: a list's values sorted and joined with `,`, a bare argument as its name.
fn push_part(out: &mut String, first: &mut bool, field: &str, value: Option<&str>) {
    if !std::mem::take(first) {
        out.push(':');
    }
    out.push_str(field);
    if let Some(v) = value {
        out.push('=');
        out.push_str(v);
    }
}

/// The query component: the configured arguments present in the request, or all of them sorted by name.
fn params(out: &mut String, query: &str, vary: &[String]) {
    if query.is_empty() {
        return;
    }
    let args = form::parse(query);
    let sorted: Vec<&String>;
    let fields: Vec<&String> = if vary.is_empty() {
        sorted = {
            let mut k: Vec<&String> = args.keys().collect();
            k.sort();
            k
        };
        sorted
    } else {
        vary.iter().collect()
    };
    let mut first = true;
    for field in fields {
        match args.get(field.as_str()) {
            None => {}
            Some(Value::Bool(_)) => push_part(out, &mut first, field, None),
            Some(Value::Array(list)) => {
                let mut values: Vec<String> = list.iter().map(text_of).collect();
                values.sort();
                push_part(out, &mut first, field, Some(&values.join(",")));
            }
            Some(v) => push_part(out, &mut first, field, Some(&text_of(v))),
        }
    }
}

fn text_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Bool(true) => "true".into(),
        other => other.to_string(),
    }
}

/// The headers component: the configured headers present in the request.
fn headers(out: &mut String, map: &HeaderMap, vary: &[(String, String)]) {
    let mut first = true;
    for (field, lookup) in vary {
        let mut values: Vec<String> = map
            .get_all(lookup.as_str())
            .iter()
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
            .collect();
        match values.len() {
            0 => {}
            1 => push_part(out, &mut first, field, Some(&values[0])),
            _ => {
                values.sort();
                push_part(out, &mut first, field, Some(&values.join(",")));
            }
        }
    }
}
