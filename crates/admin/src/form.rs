//! Form-encoded Admin API bodies (`curl -d name=x -d paths[]=/a -d config.minute=5`), decoded as Kong's
//! `arguments` module does: `a.b=x` nests, `a[]=x` and repeated keys make arrays, `a[1]=x` indexes. Values
//! stay strings; the entity's schema converts them (`Schema::infer`).

use crate::query;
use serde_json::{Map, Value};

/// The form body as a JSON object of strings, arrays and nested objects.
pub fn decode(body: &str) -> Map<String, Value> {
    let mut out = Map::new();
    for pair in body.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        let key = query::unescape(k);
        let value = Value::String(query::unescape(v));
        insert(&mut out, &key, value);
    }
    out
}

/// Sets `value` at `key`: dots nest, a trailing `[]` appends, `[n]` is a position (kept as a key, turned
/// into an array by the schema), a repeated plain key becomes an array.
fn insert(map: &mut Map<String, Value>, key: &str, value: Value) {
    let (head, rest) = match key.split_once('.') {
        Some((h, r)) => (h, Some(r)),
        None => (key, None),
    };
    let (name, index) = match head.split_once('[') {
        Some((n, i)) => (n, Some(i.trim_end_matches(']'))),
        None => (head, None),
    };
    if let Some(rest) = rest {
        let slot = map.entry(name).or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(inner) = slot {
            insert(inner, rest, value);
        }
        return;
    }
    match index {
        Some("") => match map.entry(name).or_insert_with(|| Value::Array(Vec::new())) {
            Value::Array(items) => items.push(value),
            other => *other = Value::Array(vec![other.take(), value]),
        },
        Some(i) => {
            let slot = map.entry(name).or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(inner) = slot {
                inner.insert(i.to_string(), value);
            }
        }
        None => match map.get_mut(name) {
            Some(Value::Array(items)) => items.push(value),
            Some(existing) => *existing = Value::Array(vec![existing.take(), value]),
            None => {
                map.insert(name.to_string(), value);
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn nesting_arrays_and_repeats() {
        let got = decode("name=a%20b&paths[]=/x&paths[]=/y&hosts=h1&hosts=h2&config.minute=5&service.id=1&m[2]=b&m[1]=a");
        assert_eq!(
            Value::Object(got),
            json!({"name": "a b", "paths": ["/x", "/y"], "hosts": ["h1", "h2"],
                   "config": {"minute": "5"}, "service": {"id": "1"}, "m": {"2": "b", "1": "a"}})
        );
    }
}
