//! Query strings and `application/x-www-form-urlencoded` bodies as an ordered JSON map, the way Kong's
//! `ngx.decode_args` / `ngx.encode_args` see them: a repeated name becomes an array, a name without `=` is
//! `true`, values are percent-decoded (`+` is a space).

use percent_encoding::{percent_decode_str, utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use serde_json::{Map, Value};

/// Everything but RFC 3986 unreserved characters is escaped (as `ngx.escape_uri` does for arguments).
const ESCAPED: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

fn decode(s: &str) -> String {
    let spaced = s.replace('+', " ");
    percent_decode_str(&spaced).decode_utf8_lossy().into_owned()
}

/// Parses `a=1&b&a=2` into `{"a": ["1", "2"], "b": true}`; empty parts are skipped.
pub fn parse(text: &str) -> Map<String, Value> {
    let mut out = Map::new();
    for part in text.split('&').filter(|p| !p.is_empty()) {
        let (name, value) = match part.split_once('=') {
            Some((n, v)) => (decode(n), Value::String(decode(v))),
            None => (decode(part), Value::Bool(true)),
        };
        match out.get_mut(&name) {
            Some(Value::Array(list)) => list.push(value),
            Some(prev) => *prev = Value::Array(vec![prev.take(), value]),
            None => {
                out.insert(name, value);
            }
        }
    }
    out
}

fn push(out: &mut String, name: &str, value: &Value) {
    match value {
        Value::Array(list) => list.iter().for_each(|v| push(out, name, v)),
        Value::Bool(false) | Value::Null => {}
        v => {
            if !out.is_empty() {
                out.push('&');
            }
            out.extend(utf8_percent_encode(name, ESCAPED));
            match v {
                Value::Bool(true) => {}
                Value::String(s) => {
                    out.push('=');
                    out.extend(utf8_percent_encode(s, ESCAPED));
                }
                other => {
                    out.push('=');
                    out.push_str(&other.to_string());
                }
            }
        }
    }
}

/// The inverse of [`parse`]: arrays become repeated names, `true` a bare name; `false`/null are dropped.
pub fn encode(params: &Map<String, Value>) -> String {
    let mut out = String::new();
    for (name, value) in params {
        push(&mut out, name, value);
    }
    out
}

/// The kinds of body [`body_args`] reads, by `Content-Type`.
#[derive(Clone, Copy, PartialEq)]
pub enum ArgsBody {
    Urlencoded,
    Json,
}

impl ArgsBody {
    /// The kind of a request's body, when [`body_args`] reads it.
    pub fn of(headers: &http::HeaderMap) -> Option<ArgsBody> {
        let content_type = headers
            .get(http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_ascii_lowercase();
        if content_type.contains("application/x-www-form-urlencoded") {
            Some(ArgsBody::Urlencoded)
        } else if content_type.contains("json") {
            Some(ArgsBody::Json)
        } else {
            None
        }
    }
}

/// A body's arguments: urlencoded or a JSON object (Kong's `kong.request.get_body`; multipart is not read).
pub fn body_args(ctx: &crate::ctx::RequestCtx<'_>) -> Map<String, Value> {
    let Some(body) = ctx.body.as_ref() else {
        return Map::new();
    };
    match ArgsBody::of(&ctx.request.headers) {
        Some(ArgsBody::Urlencoded) => parse(&String::from_utf8_lossy(body)),
        Some(ArgsBody::Json) => match serde_json::from_slice(body) {
            Ok(Value::Object(m)) => m,
            _ => Map::new(),
        },
        None => Map::new(),
    }
}
