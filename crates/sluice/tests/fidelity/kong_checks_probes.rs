//! The probes `kong_checks.rs` posts: for every validation in Kong's tables, an input that violates
//! it, with where Kong reports it and Kong's message. Kong's messages are described by [`TEMPLATES`] (the
//! wording of `kong/db/schema/init.lua`'s validators and entity checkers at 3.9.1); the values that violate
//! a pattern or a custom validator come from the tables (`bad`), or from the hand-made probes of
//! `kong_checks.rs` where the reader could not run the validator. Entity checks' probes are in
//! `kong_checks_entity.rs`, the placing of a value at a table path in `kong_checks_paths.rs`.

use super::kong_checks_entity::entity_check;
use super::kong_checks_paths::{place, steps, Step};
use super::kong_defaults::Row;
use serde_json::{json, Value};
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
pub(super) fn lua_number(v: &Value) -> String {
    match v.as_f64() {
        Some(x) if x.fract() == 0.0 => format!("{}", x as i64),
        Some(x) => x.to_string(),
        None => v.to_string(),
    }
}

/// Kong's `quoted_list`: `'a', 'b'`.
pub(super) fn quoted(names: &Value) -> String {
    let list: Vec<String> = strings(names).iter().map(|n| format!("'{n}'")).collect();
    list.join(", ")
}

pub(super) fn strings(v: &Value) -> Vec<String> {
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
    pub(super) custom: &'a CustomProbe,
}

/// (bad value, Kong's message) for a custom validator the reader could not run: (name, path, row).
pub(super) type CustomProbe = dyn Fn(&str, &str, &Row) -> Option<(Value, String)>;

/// The body to post: a plugin's `{name, config}` or an entity.
pub(super) fn body(name: &str, plugin: bool, inputs: &Inputs<'_>) -> Value {
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
