//! The probes `kong_checks.rs` posts: for every validation and entity check in Kong's tables, an input
//! that violates that check, with where Kong reports it and Kong's message. Kong's messages are described
//! by [`TEMPLATES`] (the wording of `kong/db/schema/init.lua`'s validators and entity checkers at 3.9.1);
//! the values that violate a pattern or a custom validator come from the tables (`bad`), or from the
//! hand-made probes of `kong_checks.rs` where the reader could not run the validator.

use super::kong_defaults::Row;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

/// Kong's message for each validator and entity checker; each `{}` takes the next argument.
const TEMPLATES: &[(&str, &str)] = &[
    ("one_of", "expected one of: {}"),
    ("between", "value should be between {} and {}"),
    ("gt", "value must be greater than {}"),
    ("len_eq", "length must be {}"),
    ("len_min", "length must be at least {}"),
    ("len_max", "length must be at most {}"),
    ("starts_with", "should start with: {}"),
    ("match", "invalid value: {}"),
    ("not_match", "invalid value: {}"),
    ("is_regex", "not a valid regex: {}"),
    ("uuid", "expected a valid UUID"),
    ("timestamp", "expected a valid timestamp"),
    ("eq", "value must be {}"),
    ("contains", "expected to contain: {}"),
    ("required", "required field missing"),
    (
        "at_least_one_of",
        "at least one of these fields must be non-empty: {}",
    ),
    (
        "only_one_of",
        "exactly one of these fields must be non-empty: {}",
    ),
    ("distinct", "values of these fields must be distinct: {}"),
    (
        "mutually_required",
        "all or none of these fields must be set: {}",
    ),
    (
        "mutually_exclusive",
        "only one or none of these fields must be set: {}",
    ),
    (
        "conditional",
        "failed conditional validation given value of field '{}'",
    ),
];

/// Kong's message for `key` with `args`.
pub(super) fn message(key: &str, args: &[String]) -> String {
    let template = TEMPLATES
        .iter()
        .find(|(k, _)| *k == key)
        .unwrap_or_else(|| panic!("no template for {key}"))
        .1;
    let mut out = String::new();
    let mut args = args.iter();
    let mut parts = template.split("{}").peekable();
    while let Some(part) = parts.next() {
        out.push_str(part);
        if parts.peek().is_some() {
            out.push_str(args.next().map(String::as_str).unwrap_or_default());
        }
    }
    out
}

/// A number as Lua's `tostring` prints it (`0`, `0.5`).
fn lua_number(v: &Value) -> String {
    match v.as_f64() {
        Some(x) if x.fract() == 0.0 => format!("{}", x as i64),
        Some(x) => x.to_string(),
        None => v.to_string(),
    }
}

/// Kong's `quoted_list`: `'a', 'b'`.
fn quoted(names: &Value) -> String {
    let list: Vec<String> = strings(names).iter().map(|n| format!("'{n}'")).collect();
    list.join(", ")
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .into_iter()
        .flatten()
        .map(|x| x.as_str().map_or_else(|| lua_number(x), str::to_string))
        .collect()
}

/// One input and the errors Kong answers it with: (dotted path in Kong's `fields`, message).
pub(super) struct Probe {
    /// The plugin or entity kind, and the row's path and check, for the report.
    pub(super) label: String,
    pub(super) name: String,
    pub(super) plugin: bool,
    pub(super) input: Value,
    pub(super) errors: Vec<(String, String)>,
}

/// What a probe needs besides the tables: valid bases, element bases and sample values, hand probes.
pub(super) struct Inputs<'a> {
    /// A valid body for an entity kind, or a valid `config` for a plugin.
    pub(super) base: &'a dyn Fn(&str, bool) -> Value,
    /// A valid value for a field (`name`, path from the posted body), for the checks that need one set.
    pub(super) sample: &'a dyn Fn(&str, &str, &Row) -> Value,
    /// (bad value, Kong's message) for a custom validator the reader could not run.
    pub(super) custom: &'a dyn Fn(&str, &str, &Row) -> Option<(Value, String)>,
}

/// A path of the tables (`metrics[].name`, `headers{}`) or of an entity check, as steps.
#[derive(Clone, Debug)]
enum Step {
    Field(String),
    Element,
    MapValue,
    /// A key of a map; the value put with it is a valid one (set by [`probes`]).
    MapKey(Value),
}

fn steps(path: &str) -> Vec<Step> {
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
fn place(value: &mut Value, steps: &[Step], bad: &Value, at: &mut Vec<String>) {
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

/// The body to post: a plugin's `{name, config}` or an entity.
fn body(name: &str, plugin: bool, inputs: &Inputs<'_>) -> Value {
    let base = (inputs.base)(name, plugin);
    if plugin {
        json!({ "name": name, "config": base })
    } else {
        base
    }
}

/// The path of a row inside the posted body.
fn full(plugin: bool, path: &str) -> String {
    if plugin {
        format!("config.{path}")
    } else {
        path.to_string()
    }
}

/// (check, bad value, message) for each field validation of a row, in Kong's validator order; a value
/// an earlier validator already refuses is left out (it never reaches the later one).
fn field_probes(row: &Row, custom: Option<(Value, String)>) -> Vec<(String, Value, String)> {
    let get = |k: &str| row.checks.iter().find(|(n, _)| n == k).map(|(_, v)| v);
    let mut out: Vec<(String, Value, String)> = Vec::new();
    let is_string = row.ty == "string";
    if let Some(list) = &row.one_of {
        let bad = if is_string {
            json!("not-one-of-them")
        } else {
            json!(
                list.as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_i64)
                    .max()
                    .unwrap_or(0)
                    + 1
            )
        };
        out.push((
            "one_of".into(),
            bad,
            message("one_of", &[strings(list).join(", ")]),
        ));
    }
    if let Some(x) = get("gt") {
        out.push(("gt".into(), x.clone(), message("gt", &[lua_number(x)])));
    }
    if get("timestamp").is_some() {
        out.push(("timestamp".into(), json!(-1), message("timestamp", &[])));
    }
    if get("uuid").is_some() {
        out.push(("uuid".into(), json!("not-a-uuid"), message("uuid", &[])));
    }
    if get("is_regex").is_some() {
        out.push((
            "is_regex".into(),
            json!("["),
            message("is_regex", &["[".into()]),
        ));
    }
    if let Some([lo, hi]) = row
        .between
        .as_ref()
        .and_then(Value::as_array)
        .map(Vec::as_slice)
    {
        let bad = json!(hi.as_f64().unwrap_or(0.0) as i64 + 1);
        let ints = [lo, hi].map(|v| format!("{}", v.as_f64().unwrap_or(0.0) as i64));
        out.push(("between".into(), bad, message("between", &ints)));
    }
    // Kong's strings take no `""` unless their `len_min` says otherwise; `one_of` is checked first.
    let implicit = is_string && row.one_of.is_none() && get("uuid").is_none();
    let len_min = get("len_min")
        .and_then(Value::as_u64)
        .or(implicit.then_some(1));
    match (len_min, row.ty.as_str()) {
        (Some(n @ 1..), "string") => out.push((
            "len_min".into(),
            json!("a".repeat(n as usize - 1)),
            message("len_min", &[n.to_string()]),
        )),
        (Some(1), "array" | "set") => out.push((
            "len_min".into(),
            json!([]),
            message("len_min", &["1".into()]),
        )),
        (Some(1), "map") => out.push((
            "len_min".into(),
            json!({}),
            message("len_min", &["1".into()]),
        )),
        _ => {}
    }
    if let Some(n) = get("len_max").and_then(Value::as_u64) {
        let bad = json!("a".repeat(n as usize + 1));
        out.push(("len_max".into(), bad, message("len_max", &[n.to_string()])));
    }
    if let Some(s) = get("starts_with").and_then(Value::as_str) {
        out.push((
            "starts_with".into(),
            json!("x"),
            message("starts_with", &[s.into()]),
        ));
    }
    for key in ["not_match", "match"] {
        if let Some(bad) = get(key).and_then(|m| m.get("bad")) {
            let shown = bad.as_str().unwrap_or_default().to_string();
            out.push((key.into(), bad.clone(), message(key, &[shown])));
        }
    }
    for key in ["match_none", "match_all"] {
        for one in get(key).and_then(Value::as_array).into_iter().flatten() {
            if let (Some(bad), Some(err)) = (one.get("bad"), one["err"].as_str()) {
                out.push((key.into(), bad.clone(), err.into()));
            }
        }
    }
    if let Some(m) = get("match_any") {
        if let (Some(bad), Some(err)) = (m.get("bad"), m["err"].as_str()) {
            out.push(("match_any".into(), bad.clone(), err.into()));
        }
    }
    let from_table =
        get("custom").and_then(|c| Some((c.get("bad")?.clone(), c["err"].as_str()?.to_string())));
    if let Some((bad, err)) = from_table.or(custom) {
        out.push(("custom".into(), bad, err));
    }
    // A field's own `err` is Kong's message for whichever of its validators fails.
    if let Some(err) = get("err").and_then(Value::as_str) {
        out.iter_mut()
            .for_each(|(_, _, msg)| *msg = err.to_string());
    }
    let mut seen: Vec<Value> = Vec::new();
    out.retain(|(_, bad, _)| {
        let first = !seen.contains(bad);
        seen.push(bad.clone());
        first
    });
    out
}

/// Every probe of every row of `rows` (Kong's table for plugins when `plugin`, else for entities).
pub(super) fn probes(
    rows: &BTreeMap<(String, String), Row>,
    plugin: bool,
    inputs: &Inputs<'_>,
) -> Vec<Probe> {
    let mut out = Vec::new();
    for ((name, path), row) in rows {
        if row.ty == "check" {
            if let Some(p) = entity_check(rows, name, path, row, plugin, inputs) {
                out.push(p);
            }
            continue;
        }
        if row.ty == "foreign" || row.shorthand {
            continue;
        }
        let custom = (inputs.custom)(name, path, row);
        for (check, bad, msg) in field_probes(row, custom) {
            let mut input = body(name, plugin, inputs);
            let mut at = Vec::new();
            let mut steps = steps(&full(plugin, path));
            if let (Some(Step::MapKey(valid)), Some(values)) =
                (steps.last_mut(), path.strip_suffix("{key}"))
            {
                let row = rows.get(&(name.clone(), format!("{values}{{}}")));
                *valid = row.map_or(json!("x"), |r| (inputs.sample)(name, path, r));
            }
            place(&mut input, &steps, &bad, &mut at);
            out.push(Probe {
                label: format!("{name} {path} {check} {bad}"),
                name: name.clone(),
                plugin,
                input,
                errors: vec![(at.join("."), msg)],
            });
        }
    }
    out
}

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
fn entity_check(
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
