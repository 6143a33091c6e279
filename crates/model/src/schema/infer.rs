//! Kong's inference of form-encoded Admin API arguments: form values are strings, so each is turned into its
//! field's type by the schema before validation (`port=80` → 80, `strip_path=false` → false, a single
//! `paths=/a` → `["/a"]`). Values that do not convert are left as they are, for validation to report.

use super::{Field, Kind, Schema};
use serde_json::{Map, Number, Value};

impl Schema {
    /// Converts the string values of a form-decoded record to its fields' types, in place.
    pub fn infer(&self, record: &mut Map<String, Value>) {
        for (name, field) in &self.fields {
            if let Some(v) = record.get_mut(*name) {
                field.infer(v);
            }
        }
    }
}

impl Field {
    fn infer(&self, v: &mut Value) {
        match (&self.kind, &mut *v) {
            (Kind::Integer | Kind::Number, Value::String(s)) => {
                // Whole numbers stay integers (`5`, not `5.0`), as Kong prints them.
                let s = s.trim();
                let n = match (s.parse::<i64>(), &self.kind) {
                    (Ok(i), _) => Some(Number::from(i)),
                    (Err(_), Kind::Number) => s.parse::<f64>().ok().and_then(Number::from_f64),
                    (Err(_), _) => None,
                };
                if let Some(n) = n {
                    *v = Value::Number(n);
                }
            }
            (Kind::Boolean, Value::String(s)) => match s.as_str() {
                "true" => *v = Value::Bool(true),
                "false" => *v = Value::Bool(false),
                _ => {}
            },
            (Kind::Array(e) | Kind::Set(e), _) => {
                if let Value::String(_) = v {
                    *v = Value::Array(vec![v.take()]);
                }
                // `paths[1]=/a&paths[2]=/b` decodes as an object keyed by position.
                if let Value::Object(m) = v {
                    let mut items: Vec<(usize, Value)> = m
                        .iter_mut()
                        .filter_map(|(k, x)| Some((k.parse().ok()?, x.take())))
                        .collect();
                    items.sort_by_key(|(i, _)| *i);
                    *v = Value::Array(items.into_iter().map(|(_, x)| x).collect());
                }
                if let Value::Array(items) = v {
                    for item in items {
                        e.infer(item);
                    }
                }
            }
            (Kind::Map(value), Value::Object(m)) => {
                for x in m.values_mut() {
                    value.infer(x);
                }
            }
            (Kind::Record(schema), Value::Object(m)) => schema.infer(m),
            _ => {}
        }
    }
}
