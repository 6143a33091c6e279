//! A [`Schema`] in the JSON shape Kong's `GET /schemas/...` returns, which decK reads to fill in defaults
//! before it diffs and Kong Manager reads to build its forms: `{"fields": [{"name": {"type": ..., ...}}]}`.

use super::{Field, Kind, Rule, Schema};
use serde_json::{json, Map, Value};

impl Schema {
    /// The schema as Kong's JSON. `entity_checks` holds the checks declared as data; the ones written
    /// as code ([`Schema::checks`]) are not shown.
    pub fn to_kong_json(&self) -> Value {
        json!({ "fields": fields(self), "entity_checks": entity_checks(self) })
    }
}

fn entity_checks(schema: &Schema) -> Vec<Value> {
    schema
        .entity_checks
        .iter()
        .map(|c| c.to_kong_json())
        .collect()
}

fn fields(schema: &Schema) -> Vec<Value> {
    schema
        .fields
        .iter()
        .map(|(name, field)| {
            let mut one = Map::new();
            one.insert((*name).to_string(), field.to_kong_json());
            Value::Object(one)
        })
        .collect()
}

impl Field {
    /// One field as Kong describes it: `type`, `required`, `default`, rules, and nested element types.
    pub fn to_kong_json(&self) -> Value {
        let mut m = Map::new();
        let ty = match &self.kind {
            Kind::String => "string",
            Kind::Integer => "integer",
            Kind::Number => "number",
            Kind::Boolean => "boolean",
            Kind::Array(_) => "array",
            Kind::Set(_) => "set",
            Kind::Map(_) => "map",
            Kind::Record(_) => "record",
            Kind::Any => "json",
        };
        m.insert("type".into(), ty.into());
        match &self.kind {
            Kind::Array(e) | Kind::Set(e) => {
                m.insert("elements".into(), e.to_kong_json());
            }
            Kind::Map(v) => {
                m.insert("keys".into(), json!({ "type": "string" }));
                m.insert("values".into(), v.to_kong_json());
            }
            Kind::Record(s) => {
                m.insert("fields".into(), fields(s).into());
                if !s.entity_checks.is_empty() {
                    m.insert("entity_checks".into(), entity_checks(s).into());
                }
            }
            _ => {}
        }
        if self.required {
            m.insert("required".into(), true.into());
        }
        if let Some(d) = &self.default {
            m.insert("default".into(), d.clone());
        }
        for rule in &self.rules {
            match rule {
                Rule::OneOf(values) => m.insert("one_of".into(), json!(values)),
                Rule::OneOfInt(values) => m.insert("one_of".into(), json!(values)),
                Rule::Between(a, b) => m.insert("between".into(), json!([number(*a), number(*b)])),
                Rule::Gt(a) => m.insert("gt".into(), number(*a)),
                Rule::LenMin(n) => m.insert("len_min".into(), json!(n)),
                Rule::LenMax(n) => m.insert("len_max".into(), json!(n)),
                Rule::Custom(_) => None,
                Rule::Keys(key) => m.insert("keys".into(), key.to_kong_json()),
            };
        }
        Value::Object(m)
    }
}

/// Whole numbers as integers (`[1, 65535]`, not `[1.0, 65535.0]`).
fn number(n: f64) -> Value {
    if n.fract() == 0.0 && n.abs() < 9e15 {
        json!(n as i64)
    } else {
        json!(n)
    }
}
