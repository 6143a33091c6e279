//! Kong's list pagination (`size`, `offset`, `next`) and `tags` filtering.

use crate::reply::{self, Reply};
use base64::Engine;
use http::StatusCode;
use serde_json::{json, Value};

/// Query parameters of a list request.
pub struct ListQuery {
    pub size: usize,
    pub start: usize,
    pub tags: Option<(Vec<String>, bool /* all must match */)>,
    pub path: String,
}

fn decode_offset(s: &str) -> Option<usize> {
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(s)
        .ok()?;
    std::str::from_utf8(&bytes)
        .ok()?
        .strip_prefix("sluice:")?
        .parse()
        .ok()
}

fn encode_offset(n: usize) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(format!("sluice:{n}"))
}

/// Decodes a percent-encoded query component.
pub fn unescape(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                match u8::from_str_radix(
                    std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("zz"),
                    16,
                ) {
                    Ok(b) => {
                        out.push(b);
                        i += 2;
                    }
                    Err(_) => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Query parameters as (name, value) pairs.
pub fn params(query: Option<&str>) -> Vec<(String, String)> {
    query
        .unwrap_or("")
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (unescape(k), unescape(v))
        })
        .collect()
}

impl ListQuery {
    #[allow(clippy::result_large_err)] // the error is the finished response; admin path, not hot
    pub fn parse(path: &str, query: Option<&str>) -> Result<ListQuery, Reply> {
        let mut q = ListQuery {
            size: 100,
            start: 0,
            tags: None,
            path: path.to_string(),
        };
        for (k, v) in params(query) {
            match k.as_str() {
                "size" => match v.parse::<usize>() {
                    Ok(n) if (1..=1000).contains(&n) => q.size = n,
                    _ => {
                        return Err(reply::error(
                            StatusCode::BAD_REQUEST,
                            9,
                            "invalid size",
                            "size must be an integer between 1 and 1000",
                            json!({}),
                        ))
                    }
                },
                "offset" => match decode_offset(&v) {
                    Some(n) => q.start = n,
                    None => {
                        let msg = format!("'{v}' is not a valid offset: bad base64 encoding");
                        return Err(reply::error(
                            StatusCode::BAD_REQUEST,
                            7,
                            "invalid offset",
                            &msg,
                            json!({}),
                        ));
                    }
                },
                "tags" => {
                    let (list, all) = if v.contains('/') {
                        (v.split('/').map(String::from).collect(), false)
                    } else {
                        (v.split(',').map(String::from).collect::<Vec<_>>(), true)
                    };
                    if v.contains('/') && v.contains(',') {
                        return Err(reply::error(
                            StatusCode::BAD_REQUEST,
                            11,
                            "invalid filter",
                            "invalid option (tags: cannot mix 'and' and 'or')",
                            json!({}),
                        ));
                    }
                    q.tags = Some((list, all));
                }
                _ => {}
            }
        }
        Ok(q)
    }

    fn tag_match(&self, item: &Value) -> bool {
        let Some((wanted, all)) = &self.tags else {
            return true;
        };
        let tags: Vec<&str> = item["tags"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|t| t.as_str())
            .collect();
        let has = |t: &String| tags.contains(&t.as_str());
        if *all {
            wanted.iter().all(has)
        } else {
            wanted.iter().any(has)
        }
    }

    /// Kong's list body for these items: `{"data": [...], "next": ..., "offset": ...}`.
    pub fn page(&self, items: Vec<Value>) -> Value {
        let filtered: Vec<Value> = items.into_iter().filter(|i| self.tag_match(i)).collect();
        let end = (self.start + self.size).min(filtered.len());
        let data: Vec<Value> = filtered
            .get(self.start..end)
            .map(|s| s.to_vec())
            .unwrap_or_default();
        if end < filtered.len() {
            let offset = encode_offset(end);
            let mut next = format!("{}?offset={offset}", self.path);
            if self.size != 100 {
                next.push_str(&format!("&size={}", self.size));
            }
            json!({ "data": data, "next": next, "offset": offset })
        } else {
            json!({ "data": data, "next": Value::Null })
        }
    }
}
