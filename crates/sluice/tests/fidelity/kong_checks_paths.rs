//! Table paths (`metrics[].name`, `headers{}`, `headers{key}`) as steps into a JSON body, and the
//! placing of a probe's value there, with the path at which Kong reports an error on it.

use serde_json::{json, Map, Value};

/// A path of the tables (`metrics[].name`, `headers{}`) or of an entity check, as steps.
#[derive(Clone, Debug)]
pub(super) enum Step {
    Field(String),
    Element,
    MapValue,
    /// A key of a map; the value put with it is a valid one (set by [`probes`]).
    MapKey(Value),
}

pub(super) fn steps(path: &str) -> Vec<Step> {
    let mut out = Vec::new();
    for part in path.split('.').filter(|p| !p.is_empty()) {
        let mut name = part;
        let mut tail = Vec::new();
        loop {
            if let Some(n) = name.strip_suffix("[]") {
                tail.push(Step::Element);
                name = n;
            } else if let Some(n) = name.strip_suffix("{}") {
                tail.push(Step::MapValue);
                name = n;
            } else if let Some(n) = name.strip_suffix("{key}") {
                tail.push(Step::MapKey(json!("x")));
                name = n;
            } else {
                break;
            }
        }
        out.push(Step::Field(name.to_string()));
        out.extend(tail.into_iter().rev());
    }
    out
}

/// Puts `bad` at `steps` inside `value` (arrays get one element, maps one key `k`, kept from the value
/// when it has one) and returns Kong's error path for it: arrays by 1-based index, a map's key left
/// out (Kong reports a value's error on the map).
pub(super) fn place(value: &mut Value, steps: &[Step], bad: &Value, at: &mut Vec<String>) {
    let Some((step, rest)) = steps.split_first() else {
        *value = bad.clone();
        return;
    };
    match step {
        Step::Field(name) => {
            if !value.is_object() {
                *value = Value::Object(Map::new());
            }
            at.push(name.clone());
            let slot = value
                .as_object_mut()
                .map(|m| m.entry(name.clone()).or_insert(Value::Null));
            if let Some(slot) = slot {
                place(slot, rest, bad, at);
            }
        }
        Step::Element => {
            let mut first = value
                .as_array()
                .and_then(|a| a.first().cloned())
                .unwrap_or(Value::Null);
            at.push("1".into());
            place(&mut first, rest, bad, at);
            *value = json!([first]);
        }
        Step::MapValue => {
            let (key, mut first) = value
                .as_object()
                .and_then(|m| m.iter().next().map(|(k, v)| (k.clone(), v.clone())))
                .unwrap_or(("k".into(), Value::Null));
            place(&mut first, rest, bad, at);
            let mut m = Map::new();
            m.insert(key, first);
            *value = Value::Object(m);
        }
        Step::MapKey(valid) => {
            let key = bad.as_str().unwrap_or_default().to_string();
            let mut m = Map::new();
            m.insert(key, valid.clone());
            *value = Value::Object(m);
        }
    }
}
