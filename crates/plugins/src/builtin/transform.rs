//! What `request-transformer` and `response-transformer` share: Kong's `name:value` config entries, their
//! schema fields, JSON `append` semantics and header edits.

use http::{HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;
use sluice_model::schema::Field;

pub mod form;
pub mod template;
#[cfg(test)]
mod tests;

/// Splits a config entry the way Kong does (`^([^:]+):*(.-)$`): the name up to the first colon, then the
/// value after any run of colons. `None` value when there is no value.
pub fn split_pair(entry: &str) -> (&str, Option<&str>) {
    match entry.split_once(':') {
        Some((name, rest)) => {
            let value = rest.trim_start_matches(':');
            (name, (!value.is_empty()).then_some(value))
        }
        None => (entry, None),
    }
}

/// Parsed `name:value` entries of one list.
pub fn pairs(list: &[String]) -> Vec<(String, Option<String>)> {
    list.iter()
        .map(|e| {
            let (n, v) = split_pair(e);
            (n.to_string(), v.map(String::from))
        })
        .collect()
}

/// A list of strings, empty by default (every transformer list).
pub fn list(element: Field) -> Field {
    Field::array(element).default(serde_json::json!([]))
}

/// A plain string list (`remove`).
pub fn names() -> Field {
    list(Field::string())
}

/// `name:value` entries: the colon is required.
pub fn colon_pairs() -> Field {
    list(Field::string().check(check_colon_pair))
}

/// `header:value` entries: a valid header name, a colon and a valid header value (no CR, LF or NUL: a
/// value like `v\r\nX-Injected: 1` is refused at load, not silently dropped per request).
pub fn header_pairs() -> Field {
    list(
        Field::string()
            .check(check_colon_pair)
            .check(check_header_name)
            .check(check_header_value),
    )
}

/// `old:new` header renames: both valid header names.
pub fn header_renames() -> Field {
    list(
        Field::string()
            .check(check_colon_pair)
            .check(check_header_rename),
    )
}

/// Header names only (`remove.headers`).
pub fn header_names() -> Field {
    list(Field::string().check(check_header_name))
}

fn as_str(v: &Value) -> &str {
    v.as_str().unwrap_or_default()
}

fn check_colon_pair(v: &Value) -> Result<(), String> {
    let s = as_str(v);
    match s.split_once(':') {
        Some((name, _)) if !name.is_empty() => Ok(()),
        _ => Err(format!("invalid value: {s}")),
    }
}

fn valid_header(name: &str) -> Result<(), String> {
    HeaderName::from_bytes(name.as_bytes())
        .map(|_| ())
        .map_err(|_| format!("'{name}' is not a valid header"))
}

fn check_header_name(v: &Value) -> Result<(), String> {
    valid_header(split_pair(as_str(v)).0)
}

fn check_header_value(v: &Value) -> Result<(), String> {
    let value = split_pair(as_str(v)).1.unwrap_or_default();
    HeaderValue::from_str(value)
        .map(|_| ())
        .map_err(|_| format!("'{value}' is not a valid header value"))
}

fn check_header_rename(v: &Value) -> Result<(), String> {
    let (old, new) = split_pair(as_str(v));
    valid_header(old)?;
    valid_header(new.unwrap_or_default())
}

/// Kong's `append_value`: a string becomes `[string, value]`, an array gets `value` pushed, anything else
/// (absent included) becomes `[value]`.
pub fn append_json(current: Option<Value>, value: Value) -> Value {
    match current {
        Some(Value::String(s)) => Value::Array(vec![Value::String(s), value]),
        Some(Value::Array(mut a)) => {
            a.push(value);
            Value::Array(a)
        }
        _ => Value::Array(vec![value]),
    }
}

/// Lua truthiness of a decoded value, which Kong's add/replace/rename test: absent and `false` are false
/// (a JSON `null` is true, as with cjson).
pub fn truthy(v: Option<&Value>) -> bool {
    !matches!(v, None | Some(Value::Bool(false)))
}

/// A header name from config (case-insensitive); `None` when invalid (the schema already rejected those).
pub fn header_name(name: &str) -> Option<HeaderName> {
    HeaderName::from_bytes(name.as_bytes()).ok()
}

/// Sets `name` to `value`, replacing every current value; invalid values are skipped.
pub fn set_header(headers: &mut HeaderMap, name: &HeaderName, value: &str) {
    if let Ok(v) = HeaderValue::from_str(value) {
        headers.insert(name.clone(), v);
    }
}

/// Adds one more `name: value` line; invalid values are skipped.
pub fn append_header(headers: &mut HeaderMap, name: &HeaderName, value: &str) {
    if let Ok(v) = HeaderValue::from_str(value) {
        headers.append(name.clone(), v);
    }
}

/// Moves every value of `old` to `new` (replacing `new`'s values); false when `old` is absent.
pub fn rename_header(headers: &mut HeaderMap, old: &HeaderName, new: &HeaderName) -> bool {
    if old == new || !headers.contains_key(old) {
        return false;
    }
    let values: Vec<HeaderValue> = headers.get_all(old).iter().cloned().collect();
    headers.remove(old);
    headers.remove(new);
    for v in values {
        headers.append(new.clone(), v);
    }
    true
}
