//! The walker behind [`Schema::validate`](super::Schema::validate).

use super::{Field, FieldError, Kind, Rule, Schema};
use serde_json::{Map, Value};

/// Where a value sits in the entity: a chain of stack frames, rendered as the dotted path (`config.paths.2`)
/// only when an error is reported, so validating a valid entity formats no strings.
#[derive(Clone, Copy)]
pub(super) enum Path<'a> {
    Root,
    Field(&'a Path<'a>, &'a str),
    /// A 1-based array position, as Kong reports it.
    Index(&'a Path<'a>, usize),
}

impl Path<'_> {
    fn is_root(&self) -> bool {
        matches!(self, Path::Root)
    }

    fn render(&self) -> String {
        let mut out = String::new();
        self.render_into(&mut out);
        out
    }

    fn render_into(&self, out: &mut String) {
        let (parent, segment) = match self {
            Path::Root => return,
            Path::Field(parent, name) => (parent, (*name).to_string()),
            Path::Index(parent, i) => (parent, i.to_string()),
        };
        parent.render_into(out);
        if !out.is_empty() {
            out.push('.');
        }
        out.push_str(&segment);
    }
}

/// Validates a record; `path` is the dotted path of the record itself ("" at the top).
pub(super) fn record(
    schema: &Schema,
    input: &Value,
    path: &Path<'_>,
    errors: &mut Vec<FieldError>,
) -> Value {
    record_with(schema, input, &[], path, errors)
}

/// Most records have at most this many fields; their field lookups live on the stack.
const STACK_FIELDS: usize = 32;

/// [`record`] where the `overrides` fields replace (or are added to) the input's, as if they had been
/// inserted into it. The input is matched against the schema in one pass over its keys, without a
/// hash lookup per schema field.
pub(super) fn record_with(
    schema: &Schema,
    input: &Value,
    overrides: &[(&str, Value)],
    path: &Path<'_>,
    errors: &mut Vec<FieldError>,
) -> Value {
    let empty = Map::new();
    let obj = match input {
        Value::Object(m) => m,
        Value::Null => &empty,
        _ => {
            let at = if path.is_root() {
                "@entity".to_string()
            } else {
                path.render()
            };
            errors.push(FieldError::new(at, "expected a record"));
            return Value::Null;
        }
    };
    let before = errors.len();
    let n = schema.fields.len();
    let mut on_stack = [None; STACK_FIELDS];
    let mut on_heap = Vec::new();
    let given: &mut [Option<&Value>] = if n <= STACK_FIELDS {
        &mut on_stack[..n]
    } else {
        on_heap.resize(n, None);
        &mut on_heap
    };
    let overridden = |key: &str| overrides.iter().any(|(k, _)| *k == key);
    let inputs = obj.iter().map(|(k, v)| (k.as_str(), v, overridden(k)));
    let added = overrides
        .iter()
        .filter(|(k, _)| !obj.contains_key(*k))
        .map(|(k, v)| (*k, v, true));
    for (key, value, is_override) in inputs.chain(added) {
        match schema.fields.iter().position(|(name, _)| *name == key) {
            Some(i) if !is_override => given[i] = Some(value),
            Some(_) => {}
            None => errors.push(FieldError::new(
                Path::Field(path, key).render(),
                "unknown field",
            )),
        }
    }
    for (key, value) in overrides {
        if let Some(i) = schema.fields.iter().position(|(name, _)| name == key) {
            given[i] = Some(value);
        }
    }
    let mut out = Map::with_capacity(n);
    for ((name, field), given) in schema.fields.iter().zip(given.iter()) {
        if field.only_when_set && given.is_none_or(|v| v.is_null()) {
            continue;
        }
        let fpath = Path::Field(path, name);
        let value = field_value(field, *given, &fpath, errors);
        out.insert((*name).to_string(), value);
    }
    if let Some(subschema) = schema.subschema {
        subschema(obj, &mut out);
    }
    if errors.len() == before {
        let declared = schema.entity_checks.iter().map(|c| c.run(&out));
        for result in schema
            .checks
            .iter()
            .map(|check| check(&out))
            .chain(declared)
        {
            if let Err(errs) = result {
                let prefix = path.render();
                errors.extend(errs.into_iter().map(|e| {
                    if prefix.is_empty() {
                        e
                    } else {
                        e.nested(&prefix)
                    }
                }));
            }
        }
    }
    Value::Object(out)
}

fn field_value(
    field: &Field,
    given: Option<&Value>,
    path: &Path<'_>,
    errors: &mut Vec<FieldError>,
) -> Value {
    let given = given.filter(|v| !v.is_null());
    match (given, &field.default) {
        (Some(v), _) => value(field, v, path, errors),
        (None, Some(default)) => value(field, default, path, errors),
        (None, None) if field.required => {
            if let Kind::Record(schema) = &field.kind {
                return record(schema, &Value::Null, path, errors);
            }
            errors.push(FieldError::new(path.render(), "required field missing"));
            Value::Null
        }
        (None, None) => match &field.kind {
            // Absent optional records are filled from their defaults when that works, as Kong does.
            Kind::Record(schema) => {
                let mut scratch = Vec::new();
                let filled = record(schema, &Value::Null, path, &mut scratch);
                if scratch.is_empty() {
                    filled
                } else {
                    Value::Null
                }
            }
            _ => Value::Null,
        },
    }
}

fn value(field: &Field, v: &Value, path: &Path<'_>, errors: &mut Vec<FieldError>) -> Value {
    let before = errors.len();
    let out = match &field.kind {
        Kind::Any => v.clone(),
        Kind::String => match v {
            Value::String(_) => v.clone(),
            _ => return type_error(path, "expected a string", errors),
        },
        Kind::Boolean => match v {
            Value::Bool(_) => v.clone(),
            _ => return type_error(path, "expected a boolean", errors),
        },
        Kind::Number => match v {
            Value::Number(_) => v.clone(),
            _ => return type_error(path, "expected a number", errors),
        },
        Kind::Integer => match integer(v) {
            Some(i) => i,
            None => return type_error(path, "expected an integer", errors),
        },
        Kind::Array(element) | Kind::Set(element) => {
            let Value::Array(items) = v else {
                let msg = if matches!(field.kind, Kind::Set(_)) {
                    "expected a set"
                } else {
                    "expected an array"
                };
                return type_error(path, msg, errors);
            };
            let mut out: Vec<Value> = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                let ipath = Path::Index(path, i + 1);
                let item = if item.is_null() {
                    errors.push(FieldError::new(ipath.render(), "required field missing"));
                    continue;
                } else {
                    value(element, item, &ipath, errors)
                };
                if matches!(field.kind, Kind::Set(_)) && out.contains(&item) {
                    continue;
                }
                out.push(item);
            }
            Value::Array(out)
        }
        Kind::Map(val) => {
            let Value::Object(m) = v else {
                return type_error(path, "expected a map", errors);
            };
            // Kong reports a map value's error on the map itself, not under its key.
            let mut out = Map::with_capacity(m.len());
            for (k, item) in m {
                if item.is_null() && val.required {
                    errors.push(FieldError::new(path.render(), "required field missing"));
                    continue;
                }
                out.insert(k.clone(), value(val, item, path, errors));
            }
            Value::Object(out)
        }
        Kind::Record(schema) => record(schema, v, path, errors),
    };
    if errors.len() == before {
        if let Err(msg) = check_rules(field, &out) {
            errors.push(FieldError::new(path.render(), msg));
        }
    }
    out
}

/// Kong's `validators_order`: which rule speaks first when a value breaks several (`""` on a `one_of`
/// field is answered `expected one of`, not `length must be at least 1`).
fn kong_order(rule: &Rule) -> u8 {
    match rule {
        Rule::Keys(_) => 0,
        Rule::OneOf(_) | Rule::OneOfInt(_) => 0,
        Rule::Gt(_) => 1,
        Rule::Between(..) => 2,
        Rule::LenMin(_) => 3,
        Rule::LenMax(_) => 4,
        Rule::Custom(_) => 5,
    }
}

/// A string's implicit rule in Kong: no empty string unless the field's own `len_min` allows it.
const NOT_EMPTY: Rule = Rule::LenMin(1);

/// The first rule `v` breaks, in Kong's order.
fn check_rules(field: &Field, v: &Value) -> Result<(), String> {
    let implicit = matches!(field.kind, Kind::String)
        && !field.rules.iter().any(|r| matches!(r, Rule::LenMin(_)));
    let mut rules: Vec<&Rule> = field.rules.iter().collect();
    if implicit {
        rules.push(&NOT_EMPTY);
    }
    rules.sort_by_key(|r| kong_order(r));
    rules.into_iter().try_for_each(|rule| check_rule(rule, v))
}

fn type_error(path: &Path<'_>, msg: &str, errors: &mut Vec<FieldError>) -> Value {
    errors.push(FieldError::new(path.render(), msg));
    Value::Null
}

/// Accepts integral JSON numbers, including `5.0` as YAML or JSON writers sometimes emit.
fn integer(v: &Value) -> Option<Value> {
    let n = v.as_number()?;
    if n.is_i64() || n.is_u64() {
        return Some(v.clone());
    }
    let f = n.as_f64()?;
    (f.fract() == 0.0 && f.abs() < 9.0e15).then(|| Value::from(f as i64))
}

fn fmt_num(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        format!("{x}")
    }
}

fn check_rule(rule: &Rule, v: &Value) -> Result<(), String> {
    match rule {
        Rule::OneOf(allowed) => match v.as_str() {
            Some(s) if !allowed.contains(&s) => {
                Err(format!("expected one of: {}", allowed.join(", ")))
            }
            _ => Ok(()),
        },
        Rule::OneOfInt(allowed) => match v.as_i64() {
            Some(n) if !allowed.contains(&n) => {
                let list: Vec<String> = allowed.iter().map(i64::to_string).collect();
                Err(format!("expected one of: {}", list.join(", ")))
            }
            _ => Ok(()),
        },
        Rule::Between(min, max) => match v.as_f64() {
            Some(x) if x < *min || x > *max => Err(format!(
                "value should be between {} and {}",
                fmt_num(*min),
                fmt_num(*max)
            )),
            _ => Ok(()),
        },
        Rule::Gt(min) => match v.as_f64() {
            Some(x) if x <= *min => Err(format!("value must be greater than {}", fmt_num(*min))),
            _ => Ok(()),
        },
        Rule::LenMin(n) => match len(v) {
            Some(l) if l < *n => Err(format!("length must be at least {n}")),
            _ => Ok(()),
        },
        Rule::LenMax(n) => match len(v) {
            Some(l) if l > *n => Err(format!("length must be at most {n}")),
            _ => Ok(()),
        },
        Rule::Custom(f) => f(v),
        Rule::Keys(key) => v
            .as_object()
            .into_iter()
            .flatten()
            .try_for_each(|(k, _)| check_rules(key, &Value::String(k.clone()))),
    }
}

fn len(v: &Value) -> Option<usize> {
    match v {
        Value::String(s) => Some(s.chars().count()),
        Value::Array(a) => Some(a.len()),
        Value::Object(m) => Some(m.len()),
        _ => None,
    }
}
