//! Every plugin's `config` schema against Kong 3.9.1's, field by field: type, default, `required`,
//! `one_of` and `between`, nested records and array elements included. Kong's side is the table
//! `kong-3.9-plugin-schemas.txt` (read from `kong/plugins/<name>/schema.lua` at 3.9.1; see its header);
//! Sluice's side is what `GET /schemas/plugins/<name>` serves, the plugin's schema as Kong's JSON.

use serde_json::Value;
use sluice_plugins::builtin::all_for;
use std::collections::BTreeMap;

/// One field of a plugin's config: `path` is dotted for records, `[]` for an array's or set's elements,
/// `{}` for a map's values.
#[derive(Debug, Default, Clone)]
pub(super) struct Row {
    pub(super) ty: String,
    required: bool,
    default: Option<Value>,
    pub(super) one_of: Option<Value>,
    pub(super) between: Option<Value>,
    /// One of Kong's `shorthand_fields`: an input-only alias, compared by type only.
    pub(super) shorthand: bool,
    /// Kong's other validations (`len_min`, `match`, `custom`, ...) and, on an entity check's row (type
    /// `check`), `at` and the check: compared by behaviour in `kong_checks.rs`.
    pub(super) checks: Vec<(String, Value)>,
}

impl Row {
    /// A row this file compares: a field, not an entity check nor a map's key checks.
    pub(super) fn is_field(&self, path: &str) -> bool {
        self.ty != "check" && !path.ends_with("{key}")
    }
}

/// (plugin, path, what differs): differences kept on purpose, each in docs/differences.md.
const KEPT: &[(&str, &str, &str)] = &[
    // Kong draws a random secret when the schema loads; Sluice draws one per node too, and shows it.
    ("session", "secret", "default"),
    // Kong marks it required and `auto`: generated when absent. Sluice generates it too.
    ("oauth2", "provision_key", "required"),
    // Kong marks a metric's `stat_type` required, and its entity check then answers a missing one with
    // `field required for entity check`; Sluice leaves it optional so its check gives that answer.
    ("datadog", "metrics[].stat_type", "required"),
    ("statsd", "metrics[].stat_type", "required"),
    // A status code Kong would fail on when answering is refused on load: an integer in 100..599.
    ("ip-restriction", "status", "type"),
    ("ip-restriction", "status", "between"),
    ("rate-limiting", "error_code", "type"),
    ("rate-limiting", "error_code", "between"),
];

/// Kong's plugin rows.
pub(super) fn kong_rows() -> BTreeMap<(String, String), Row> {
    rows_of("kong-3.9-plugin-schemas.txt")
}

/// The rows of a table file: `name path type [required] [default=JSON] [one_of=JSON] [between=JSON]
/// [other=JSON]... [shorthand]` per line.
pub(super) fn rows_of(file: &str) -> BTreeMap<(String, String), Row> {
    let text = super::fixture(file);
    let mut rows = BTreeMap::new();
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let mut words = line.splitn(4, ' ');
        let (plugin, path, ty) = (words.next(), words.next(), words.next());
        let (Some(plugin), Some(path), Some(ty)) = (plugin, path, ty) else {
            panic!("bad line: {line}");
        };
        let mut row = Row {
            ty: ty.to_string(),
            ..Row::default()
        };
        let mut rest = words.next().unwrap_or_default().trim_start();
        while !rest.is_empty() {
            let flag = ["required", "shorthand"]
                .into_iter()
                .find_map(|f| Some((f, rest.strip_prefix(f)?)));
            if let Some((flag, r)) = flag {
                row.required |= flag == "required";
                row.shorthand |= flag == "shorthand";
                rest = r.trim_start();
                continue;
            }
            let (key, r) = rest.split_once('=').unwrap_or_else(|| panic!("{line}"));
            let mut values = serde_json::Deserializer::from_str(r).into_iter::<Value>();
            let value = values.next().and_then(Result::ok);
            rest = r[values.byte_offset()..].trim_start();
            match key {
                "default" => row.default = value,
                "one_of" => row.one_of = value,
                "between" => row.between = value,
                _ => row.checks.push((
                    key.to_string(),
                    value.unwrap_or_else(|| panic!("{line}: {key}")),
                )),
            }
        }
        rows.insert((plugin.to_string(), path.to_string()), row);
    }
    rows
}

/// Sluice's rows, from each plugin's schema in Kong's JSON (DB mode: the schema with every option).
fn sluice_rows() -> BTreeMap<(String, String), Row> {
    let mut rows = BTreeMap::new();
    for builtin in all_for(true) {
        let json = builtin.def.config.to_kong_json();
        walk(builtin.def.name, "", &json["fields"], &mut rows);
    }
    rows
}

pub(super) fn walk(
    plugin: &str,
    prefix: &str,
    fields: &Value,
    rows: &mut BTreeMap<(String, String), Row>,
) {
    for one in fields.as_array().into_iter().flatten() {
        for (name, field) in one.as_object().into_iter().flatten() {
            add(plugin, &format!("{prefix}{name}"), field, rows);
        }
    }
}

fn add(plugin: &str, path: &str, f: &Value, rows: &mut BTreeMap<(String, String), Row>) {
    let row = Row {
        ty: f["type"].as_str().unwrap_or_default().to_string(),
        required: f["required"] == true,
        default: f.get("default").cloned(),
        one_of: f.get("one_of").cloned(),
        between: f.get("between").cloned(),
        shorthand: false,
        checks: Vec::new(),
    };
    rows.insert((plugin.to_string(), path.to_string()), row);
    if let Some(fields) = f.get("fields") {
        walk(plugin, &format!("{path}."), fields, rows);
    }
    if let Some(e) = f.get("elements") {
        add(plugin, &format!("{path}[]"), e, rows);
    }
    if let Some(v) = f.get("values") {
        add(plugin, &format!("{path}{{}}"), v, rows);
    }
}

/// JSON equality with numbers compared by value (`1` equals `1.0`) and `one_of` lists as sets.
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

fn same_set(a: &Option<Value>, b: &Option<Value>) -> bool {
    let sorted = |v: &Option<Value>| {
        let mut list: Vec<String> = v
            .iter()
            .flat_map(|v| v.as_array().cloned().unwrap_or_default())
            .map(|x| x.to_string())
            .collect();
        list.sort();
        list
    };
    sorted(a) == sorted(b)
}

/// Kong's `default = null` is no default.
fn same_opt(a: &Option<Value>, b: &Option<Value>) -> bool {
    let a = &a.clone().filter(|v| !v.is_null());
    match (a, b) {
        (Some(a), Some(b)) => same(a, b),
        (a, b) => a.is_none() && b.is_none(),
    }
}

/// What differs between Kong's row and Sluice's: the aspects by name. `required` counts only where it
/// means something: a field without a default that is not a record (Kong fills a record from its fields).
/// A shorthand is compared by type only.
pub(super) fn differences(kong: &Row, ours: &Row) -> Vec<&'static str> {
    let must = |r: &Row| r.required && r.default.is_none() && r.ty != "record";
    let mut checks = vec![("type", kong.ty == ours.ty)];
    if !kong.shorthand {
        checks.extend([
            ("default", same_opt(&kong.default, &ours.default)),
            ("required", must(kong) == must(ours)),
            (
                "one_of",
                same_set(&kong.one_of, &without_3_10(&ours.one_of)),
            ),
            ("between", same_opt(&kong.between, &ours.between)),
        ]);
    }
    checks
        .into_iter()
        .filter(|(_, ok)| !ok)
        .map(|(what, _)| what)
        .collect()
}

/// A `one_of` without the values Kong added in 3.10 (the `instana` propagation format).
fn without_3_10(one_of: &Option<Value>) -> Option<Value> {
    let mut v = one_of.clone()?;
    if let Value::Array(list) = &mut v {
        list.retain(|x| x != "instana");
    }
    Some(v)
}

#[test]
fn every_plugin_field_has_kongs_type_default_and_checks() {
    let kong = kong_rows();
    let ours = sluice_rows();
    let mut found = Vec::new();
    for ((plugin, path), k) in kong.iter().filter(|((_, p), k)| k.is_field(p)) {
        let Some(o) = ours.get(&(plugin.clone(), path.clone())) else {
            found.push(format!("{plugin} {path}: missing in Sluice"));
            continue;
        };
        for what in differences(k, o) {
            let at = (plugin.as_str(), path.as_str(), what);
            if KEPT.contains(&at) {
                continue;
            }
            found.push(format!("{plugin} {path} {what}: Kong {k:?}, Sluice {o:?}"));
        }
    }
    let plugins: Vec<&String> = kong.keys().map(|(p, _)| p).collect();
    for (plugin, path) in ours.keys() {
        let root = path.split(['.', '[', '{']).next().unwrap_or_default();
        let since_3_10 = super::kong_fields::SINCE_3_10.contains(&(plugin.as_str(), root));
        if plugins.contains(&plugin)
            && !kong.contains_key(&(plugin.clone(), path.clone()))
            && !since_3_10
        {
            found.push(format!("{plugin} {path}: not in Kong 3.9.1"));
        }
    }
    let missing: Vec<_> = all_for(true)
        .iter()
        .map(|b| b.def.name)
        .filter(|n| !kong.keys().any(|(p, _)| p == n))
        .collect();
    assert!(missing.is_empty(), "plugins not in the table: {missing:?}");
    assert!(
        found.is_empty(),
        "{} differences:\n{}",
        found.len(),
        found.join("\n")
    );
}
