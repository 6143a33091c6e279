//! The probes of Kong's entity checks (`name @N check at=... KIND=ARG` rows): the condition met and the
//! checked field breaking it, with Kong's field error and entity error where Kong reports them.

use super::kong_checks_paths::{place, steps};
use super::kong_checks_probes::{body, message, quoted, strings, Inputs, Probe};
use super::kong_defaults::Row;
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// The row of the field at `path` (relative to the body), for its type and `one_of`.
fn row_at<'a>(
    rows: &'a BTreeMap<(String, String), Row>,
    name: &str,
    plugin: bool,
    path: &str,
) -> Option<&'a Row> {
    let table = if plugin {
        path.strip_prefix("config.")?
    } else {
        path
    };
    rows.get(&(name.to_string(), table.to_string()))
}

/// A value that passes `if_match` (a conditional's condition) for the field `row`.
fn satisfying(m: &Value, row: Option<&Row>) -> Option<Value> {
    let strip = |p: &str| p.trim_start_matches('^').trim_end_matches('$').to_string();
    if let Some(v) = m.get("eq") {
        return Some(v.clone());
    }
    if let Some(v) = m["one_of"].as_array().and_then(|l| l.first()) {
        return Some(v.clone());
    }
    if let Some(p) = m["match"].as_str() {
        return Some(json!(strip(p)));
    }
    if let Some(p) = m["match_any"]["patterns"]
        .as_array()
        .and_then(|l| l.first())
        .and_then(Value::as_str)
    {
        return Some(json!(strip(p)));
    }
    if let Some(x) = m["gt"].as_f64() {
        return Some(json!(x as i64 + 1));
    }
    let outside = |not: &Value, of: &Option<Value>| {
        let not = not.as_array()?;
        of.as_ref()?
            .as_array()?
            .iter()
            .find(|v| !not.contains(v))
            .cloned()
    };
    if let Some(not) = m.get("not_one_of") {
        return outside(not, &row?.one_of);
    }
    if let Some(not) = m["elements"].get("not_one_of") {
        return Some(json!([outside(not, &row?.one_of)?]));
    }
    None
}

/// The probe of one entity check row (`name @N check at=... KIND=ARG`).
pub(super) fn entity_check(
    rows: &BTreeMap<(String, String), Row>,
    name: &str,
    path: &str,
    row: &Row,
    plugin: bool,
    inputs: &Inputs<'_>,
) -> Option<Probe> {
    let at = row
        .checks
        .iter()
        .find(|(k, _)| k == "at")?
        .1
        .as_str()?
        .to_string();
    let (kind, arg) = row.checks.iter().find(|(k, _)| k != "at")?;
    let prefix = if at.is_empty() {
        String::new()
    } else {
        format!("{at}.")
    };
    let mut input = body(name, plugin, inputs);
    let mut set = |field: &str, value: &Value| {
        let mut where_ = Vec::new();
        place(
            &mut input,
            &steps(&format!("{prefix}{field}")),
            value,
            &mut where_,
        );
        where_.join(".")
    };
    let sample = |field: &str| {
        let full = format!("{prefix}{field}");
        let r = row_at(
            rows,
            name,
            plugin,
            &full.replace("[]", "").replace("{}", ""),
        );
        r.map(|r| (inputs.sample)(name, &full, r))
            .unwrap_or(json!("x"))
    };
    let mut entity_at = {
        let mut where_ = Vec::new();
        let mut scratch = body(name, plugin, inputs);
        place(&mut scratch, &steps(&at), &Value::Null, &mut where_);
        where_
    };
    entity_at.push("@entity".into());
    let names = strings(arg);
    let mut errors = Vec::new();
    match kind.as_str() {
        "at_least_one_of" => {
            names.iter().for_each(|n| drop(set(n, &Value::Null)));
            errors.push(message(kind, &[quoted(arg)]));
        }
        "only_one_of" | "mutually_exclusive" | "distinct" => {
            for n in &names {
                let v = if kind == "distinct" {
                    json!("same")
                } else {
                    sample(n)
                };
                set(n, &v);
            }
            errors.push(message(kind, &[quoted(arg)]));
        }
        "mutually_required" => {
            let first = names.first()?;
            set(first, &sample(first));
            errors.push(message(kind, &[quoted(arg)]));
        }
        "conditional" => {
            return conditional(
                rows, name, path, plugin, arg, input, &prefix, entity_at, inputs,
            )
        }
        _ => return None,
    }
    Some(Probe {
        label: format!("{name} {path} {kind}"),
        name: name.to_string(),
        plugin,
        input,
        errors: errors
            .into_iter()
            .map(|m| (entity_at.join("."), m))
            .collect(),
    })
}

/// A `conditional` check's probe: the condition met, the `then` field violating `then_match`.
#[allow(clippy::too_many_arguments)]
fn conditional(
    rows: &BTreeMap<(String, String), Row>,
    name: &str,
    path: &str,
    plugin: bool,
    arg: &Value,
    mut input: Value,
    prefix: &str,
    entity_at: Vec<String>,
    inputs: &Inputs<'_>,
) -> Option<Probe> {
    let (if_field, then_field) = (arg["if_field"].as_str()?, arg["then_field"].as_str()?);
    let if_row = row_at(rows, name, plugin, &format!("{prefix}{if_field}"));
    let then_row = row_at(rows, name, plugin, &format!("{prefix}{then_field}"));
    let when = satisfying(&arg["if_match"], if_row)?;
    let then = &arg["then_match"];
    let (bad, field_msg) = if then["required"] == true {
        (Value::Null, message("required", &[]))
    } else if let Some(eq) = then.get("eq") {
        let bad = match eq {
            Value::Null => (inputs.sample)(name, &format!("{prefix}{then_field}"), then_row?),
            Value::Bool(b) => json!(!b),
            _ => return None,
        };
        let shown = if eq.is_null() {
            "null".to_string()
        } else {
            eq.to_string()
        };
        (bad, message("eq", &[shown]))
    } else if let Some(list) = then["one_of"].as_array() {
        let bad = then_row?
            .one_of
            .as_ref()?
            .as_array()?
            .iter()
            .find(|v| !list.contains(v))?
            .clone();
        (
            bad,
            message("one_of", &[strings(&then["one_of"]).join(", ")]),
        )
    } else if let Some(c) = then["contains"].as_str() {
        (json!(["nbf"]), message("contains", &[c.into()]))
    } else if then.get("len_eq").is_some() {
        (json!(["example.com"]), message("len_eq", &["0".into()]))
    } else {
        return None;
    };
    let mut where_if = Vec::new();
    place(
        &mut input,
        &steps(&format!("{prefix}{if_field}")),
        &when,
        &mut where_if,
    );
    let mut where_then = Vec::new();
    place(
        &mut input,
        &steps(&format!("{prefix}{then_field}")),
        &bad,
        &mut where_then,
    );
    let entity_msg = match arg["then_err"].as_str() {
        Some(e) => e.replace("%s", if_field),
        None => message("conditional", &[if_field.to_string()]),
    };
    Some(Probe {
        label: format!("{name} {path} conditional {if_field}={when} {then_field}={bad}"),
        name: name.to_string(),
        plugin,
        input,
        errors: vec![
            (where_then.join("."), field_msg),
            (entity_at.join("."), entity_msg),
        ],
    })
}
