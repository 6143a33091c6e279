//! The subset of Kong's request-transformer templates Sluice renders: `$(headers.name)`,
//! `$(headers["name"])`, `$(query_params.name)`, `$(query_params["name"])`, `$(uri_captures.name)` and
//! `$(uri_captures[1])`. Kong evaluates these as sandboxed Lua; any other expression is left as written.
//! As in Kong, `headers.x_name` finds the header `x-name`, and a missing value renders as an empty string.

use http::HeaderMap;
use serde_json::{Map, Value};

/// The request facts a template may read, taken before any transform.
pub struct Env<'a> {
    pub headers: &'a HeaderMap,
    pub query: &'a Map<String, Value>,
    pub captures: Option<&'a sluice_router::Captures>,
}

/// True when `value` contains a `$(...)` expression (so rendering can be skipped otherwise).
pub fn is_template(value: &str) -> bool {
    value.contains("$(")
}

/// Renders every `$(...)` in `value`.
pub fn render(value: &str, env: &Env<'_>) -> String {
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(start) = rest.find("$(") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find(')') else {
            out.push_str(&rest[start..]);
            return out;
        };
        let expr = after[..end].trim();
        match lookup(expr, env) {
            Some(v) => out.push_str(&v),
            None => out.push_str(&rest[start..start + 2 + end + 1]),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    out
}

/// `table.key` or `table["key"]` / `table['key']` / `table[1]`.
fn split_expr(expr: &str) -> Option<(&str, &str)> {
    if let Some((table, key)) = expr.split_once('.') {
        return Some((table, key));
    }
    let (table, rest) = expr.split_once('[')?;
    let key = rest.strip_suffix(']')?.trim();
    let key = key
        .strip_prefix('"')
        .and_then(|k| k.strip_suffix('"'))
        .or_else(|| key.strip_prefix('\'').and_then(|k| k.strip_suffix('\'')))
        .unwrap_or(key);
    Some((table.trim(), key))
}

/// `Some` (possibly empty) for a known table, `None` for an expression Sluice does not evaluate.
fn lookup(expr: &str, env: &Env<'_>) -> Option<String> {
    let (table, key) = split_expr(expr)?;
    match table {
        "headers" => {
            let name = key.to_ascii_lowercase().replace('_', "-");
            let values: Vec<&str> = env
                .headers
                .get_all(name.as_str())
                .iter()
                .filter_map(|v| v.to_str().ok())
                .collect();
            Some(values.join(", "))
        }
        "query_params" => Some(match env.query.get(key) {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Array(a)) => a.first().and_then(Value::as_str).unwrap_or("").into(),
            Some(Value::Bool(true)) => "true".into(),
            _ => String::new(),
        }),
        "uri_captures" => {
            let caps = env.captures;
            let found = match key.parse::<usize>() {
                Ok(i) => caps.and_then(|c| c.unnamed.get(i).cloned().flatten()),
                Err(_) => caps.and_then(|c| {
                    c.named
                        .iter()
                        .find(|(n, _)| n == key)
                        .map(|(_, v)| v.clone())
                }),
            };
            Some(found.unwrap_or_default())
        }
        _ => None,
    }
}
