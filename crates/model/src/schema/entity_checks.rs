//! Kong's entity checkers as data: the cross-field rules of a record (`at_least_one_of`, `conditional`,
//! ...) declared once, run after the record's fields validated, answered with Kong's messages
//! (`kong/db/schema/init.lua`'s `entity_checkers`), and shown in `GET /schemas` as Kong's
//! `entity_checks`. Rules Kong writes as code stay [`RecordCheck`](super::RecordCheck)s.

use super::FieldError;
use serde_json::{json, Map, Value};

/// One of Kong's entity checkers over fields of the record that holds it.
#[derive(Debug, Clone)]
pub enum EntityCheck {
    /// At least one of the fields is set (non-empty).
    AtLeastOneOf(&'static [&'static str]),
    /// The set (non-empty) fields hold distinct values.
    Distinct(&'static [&'static str]),
    /// When `if_field` meets `when`, `then_field` must meet `then`; `then_err` replaces the entity
    /// message (its `%s` is `if_field`).
    Conditional {
        if_field: &'static str,
        when: When,
        then_field: &'static str,
        then: Then,
        then_err: Option<&'static str>,
    },
}

/// A conditional's condition on its `if_field`.
#[derive(Debug, Clone)]
pub enum When {
    /// The value is this string.
    Is(&'static str),
    /// The value is one of these.
    OneOf(&'static [&'static str]),
    /// The value is none of these.
    NotOneOf(&'static [&'static str]),
}

/// What a conditional demands of its `then_field`.
#[derive(Debug, Clone)]
pub enum Then {
    /// Set (not null).
    Required,
    /// Null.
    Null,
    /// One of these strings.
    OneOf(&'static [&'static str]),
}

/// Kong's `is_nonempty`: not null, not `""`, not an empty list or object.
fn nonempty(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => false,
        Some(Value::String(s)) => !s.is_empty(),
        Some(Value::Array(a)) => !a.is_empty(),
        Some(Value::Object(m)) => !m.is_empty(),
        Some(_) => true,
    }
}

/// Kong's `quoted_list`: `'a', 'b'`.
fn quoted(names: &[&str]) -> String {
    let list: Vec<String> = names.iter().map(|n| format!("'{n}'")).collect();
    list.join(", ")
}

impl When {
    fn holds(&self, v: &Value) -> bool {
        let s = v.as_str();
        match self {
            When::Is(x) => s == Some(x),
            When::OneOf(list) => s.is_some_and(|s| list.contains(&s)),
            When::NotOneOf(list) => s.is_some_and(|s| !list.contains(&s)),
        }
    }

    fn to_json(&self) -> Value {
        match self {
            When::Is(x) => json!({ "eq": x }),
            When::OneOf(list) => json!({ "one_of": list }),
            When::NotOneOf(list) => json!({ "not_one_of": list }),
        }
    }
}

impl Then {
    /// Kong's field message when `v` fails this, or none.
    fn fails(&self, v: &Value) -> Option<String> {
        match self {
            Then::Required if v.is_null() => Some("required field missing".into()),
            Then::Null if !v.is_null() => Some("value must be null".into()),
            Then::OneOf(list) if v.as_str().is_some_and(|s| !list.contains(&s)) => {
                Some(format!("expected one of: {}", list.join(", ")))
            }
            _ => None,
        }
    }

    fn to_json(&self) -> Value {
        match self {
            Then::Required => json!({ "required": true }),
            Then::Null => json!({ "eq": null }),
            Then::OneOf(list) => json!({ "one_of": list }),
        }
    }
}

impl EntityCheck {
    /// Runs the check on a normalized record; errors at the record's `@entity` (and, for a
    /// conditional, at its `then_field` too), as Kong reports them.
    pub fn run(&self, record: &Map<String, Value>) -> Result<(), Vec<FieldError>> {
        let get = |f: &str| record.get(f);
        match self {
            EntityCheck::AtLeastOneOf(names) => {
                if names.iter().any(|n| nonempty(get(n))) {
                    return Ok(());
                }
                Err(vec![FieldError::entity_check(format!(
                    "at least one of these fields must be non-empty: {}",
                    quoted(names)
                ))])
            }
            EntityCheck::Distinct(names) => {
                let set: Vec<&Value> = names
                    .iter()
                    .filter_map(|n| get(n).filter(|v| nonempty(Some(v))))
                    .collect();
                if set.iter().enumerate().all(|(i, v)| !set[..i].contains(v)) {
                    return Ok(());
                }
                Err(vec![FieldError::entity_check(format!(
                    "values of these fields must be distinct: {}",
                    quoted(names)
                ))])
            }
            EntityCheck::Conditional {
                if_field,
                when,
                then_field,
                then,
                then_err,
            } => {
                let (Some(v), then_value) = (get(if_field), get(then_field)) else {
                    return Ok(());
                };
                if !when.holds(v) {
                    return Ok(());
                }
                let Some(msg) = then.fails(then_value.unwrap_or(&Value::Null)) else {
                    return Ok(());
                };
                let entity = match then_err {
                    Some(e) => e.replace("%s", if_field),
                    None => {
                        format!("failed conditional validation given value of field '{if_field}'")
                    }
                };
                Err(vec![
                    FieldError::new(*then_field, msg),
                    FieldError::entity_check(entity),
                ])
            }
        }
    }

    /// The check as Kong's `GET /schemas` shows it: `{"conditional": {...}}`.
    pub fn to_kong_json(&self) -> Value {
        match self {
            EntityCheck::AtLeastOneOf(names) => json!({ "at_least_one_of": names }),
            EntityCheck::Distinct(names) => json!({ "distinct": names }),
            EntityCheck::Conditional {
                if_field,
                when,
                then_field,
                then,
                then_err,
            } => {
                let mut c = json!({
                    "if_field": if_field,
                    "if_match": when.to_json(),
                    "then_field": then_field,
                    "then_match": then.to_json(),
                });
                if let Some(e) = then_err {
                    c["then_err"] = json!(e);
                }
                json!({ "conditional": c })
            }
        }
    }
}
