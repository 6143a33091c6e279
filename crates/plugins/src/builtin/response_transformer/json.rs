//! The JSON half of response-transformer: key edits on a JSON object body, with `json_types` casts.

use super::Lists;
use crate::builtin::transform;
use serde_json::{Map, Value};

/// A value to set, already cast per `json_types`.
type Entry = (String, Value);

/// The JSON operations of one config, in Kong's order.
pub struct JsonOps {
    remove: Vec<String>,
    rename: Vec<(String, String)>,
    replace: Vec<Entry>,
    add: Vec<Entry>,
    append: Vec<Entry>,
}

/// Kong's `json_value` + `cast_value`: `number` parses (entries that do not parse are skipped), `boolean` is
/// true only for `"true"`, anything else stays a string.
fn cast(value: &str, json_type: Option<&str>) -> Option<Value> {
    match json_type {
        Some("number") => {
            let n: f64 = value.trim().parse().ok()?;
            let as_int = n as i64;
            Some(if as_int as f64 == n && n.abs() < 9.0e15 {
                Value::from(as_int)
            } else {
                serde_json::Number::from_f64(n).map(Value::Number)?
            })
        }
        Some("boolean") => Some(Value::Bool(value == "true")),
        _ => Some(Value::String(value.to_string())),
    }
}

/// `name:value` entries with a value, cast by position.
fn typed(lists: &Lists) -> Vec<Entry> {
    transform::pairs(&lists.json)
        .into_iter()
        .enumerate()
        .filter_map(|(i, (name, value))| {
            let v = cast(&value?, lists.json_types.get(i).map(String::as_str))?;
            Some((name, v))
        })
        .collect()
}

impl JsonOps {
    pub(super) fn new(
        remove: &Lists,
        rename: &Lists,
        replace: &Lists,
        add: &Lists,
        append: &Lists,
    ) -> JsonOps {
        JsonOps {
            remove: transform::pairs(&remove.json)
                .into_iter()
                .map(|p| p.0)
                .collect(),
            rename: transform::pairs(&rename.json)
                .into_iter()
                .filter_map(|(o, n)| Some((o, n?)))
                .collect(),
            replace: typed(replace),
            add: typed(add),
            append: typed(append),
        }
    }

    /// No JSON transform configured: the body is never touched.
    pub fn is_empty(&self) -> bool {
        self.remove.is_empty()
            && self.rename.is_empty()
            && self.replace.is_empty()
            && self.add.is_empty()
            && self.append.is_empty()
    }

    /// The transformed body, or `None` when `body` is not a JSON object.
    pub fn transform(&self, body: &[u8]) -> Option<String> {
        let Ok(Value::Object(mut obj)) = serde_json::from_slice::<Value>(body) else {
            return None;
        };
        self.apply(&mut obj);
        Some(Value::Object(obj).to_string())
    }

    fn apply(&self, obj: &mut Map<String, Value>) {
        for name in &self.remove {
            obj.shift_remove(name);
        }
        for (old, new) in &self.rename {
            if let Some(v) = obj.shift_remove(old) {
                obj.insert(new.clone(), v);
            }
        }
        for (name, value) in &self.replace {
            if transform::truthy(obj.get(name)) {
                obj.insert(name.clone(), value.clone());
            }
        }
        for (name, value) in &self.add {
            if !transform::truthy(obj.get(name)) {
                obj.insert(name.clone(), value.clone());
            }
        }
        for (name, value) in &self.append {
            let current = obj.get_mut(name).map(Value::take);
            obj.insert(name.clone(), transform::append_json(current, value.clone()));
        }
    }
}
