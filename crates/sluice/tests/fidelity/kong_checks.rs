//! Kong's validations and entity checks, by behaviour: for every check in Kong 3.9.1's tables
//! (`kong-3.9-*-schemas.txt`: `len_min`, `gt`, `match`, custom validators, `entity_checks`, ...), an input
//! violating it is posted to the real binary's `POST /schemas/plugins/validate` or
//! `POST /schemas/{entity}/validate`, which must answer 400 with Kong's message where Kong puts it. The
//! probes are made in `kong_checks_probes.rs`; every difference is reported at once, less the ones kept on
//! purpose ([`KEPT`], each a row of docs/differences.md, "Schemas").

use super::kong_checks_probes::{probes, Inputs, Probe};
use super::kong_defaults::{rows_of, Row};
use super::BIN;
use serde_json::{json, Value};
use sluice_testkit::{send_json, Gateway, X509_V1_CERT, X509_V1_KEY};

/// Any id a reference points at: validation does not look references up.
const ID: &str = "9e4d6c2b-2a8d-4c3b-9f10-39a0000000aa";

/// (name, start of the row path, check): differences kept, each a row of docs/differences.md, "Schemas".
const KEPT: &[(&str, &str, &str)] = &[
    // "A number field with fractional bounds": Kong prints the bounds with %d.
    ("*", "queue.initial_retry_delay", "between"),
    ("*", "queue.max_retry_delay", "between"),
    // "opentelemetry's and zipkin's propagation formats": Sluice also takes Kong 3.10's instana.
    ("opentelemetry", "header_type", "one_of"),
    ("opentelemetry", "propagation.", "one_of"),
    ("zipkin", "header_type", "one_of"),
    ("zipkin", "default_header_type", "one_of"),
    ("zipkin", "propagation.", "one_of"),
    // "A custom_fields_by_lua key or value": refused whole, Sluice runs no Lua.
    ("*", "custom_fields_by_lua{key}", "len_min"),
    // "ip-restriction status, rate-limiting error_code": an integer status, checked on load.
    ("rate-limiting", "error_code", "gt"),
    // "rate-limiting / response-ratelimiting redis.port or redis.timeout given as null".
    ("rate-limiting", "@3", "conditional"),
    ("rate-limiting", "@4", "conditional"),
    ("response-ratelimiting", "@3", "conditional"),
    ("response-ratelimiting", "@4", "conditional"),
    // "certificates' snis in GET /schemas/certificates": any JSON (the nested declarative form too).
    ("certificates", "snis[]", "*"),
    // "A target's target that is empty or blank": normalized before the schema runs.
    ("targets", "target", "*"),
];

/// Whether a probe's difference is one of [`KEPT`]; a probe's label is `name path check ...`.
fn kept(probe: &Probe) -> bool {
    let mut words = probe.label.split(' ');
    let (name, path, check) = (words.next(), words.next(), words.next());
    KEPT.iter().any(|(n, p, c)| {
        (*n == "*" || Some(*n) == name)
            && path.is_some_and(|path| path.starts_with(p))
            && (*c == "*" || Some(*c) == check)
    })
}

/// A valid plugin `config`, or a valid entity, for each name whose empty one is not.
fn base(name: &str, plugin: bool) -> Value {
    let owned = json!({ "consumer": { "id": ID } });
    let with = |extra: Value| {
        let mut v = owned.clone();
        v.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        v
    };
    let metric = json!([{ "name": "request_count", "stat_type": "counter", "sample_rate": 1 }]);
    match (plugin, name) {
        (true, "acl") => json!({ "allow": ["a"] }),
        (true, "datadog" | "statsd") => json!({ "metrics": metric }),
        (true, "file-log") => json!({ "path": "/tmp/sluice.log" }),
        (true, "http-log") => json!({ "http_endpoint": "http://example.com/log" }),
        (true, "ip-restriction") => json!({ "allow": ["10.0.0.1"] }),
        (true, "ldap-auth") => {
            json!({ "ldap_host": "ldap.example.com", "base_dn": "dc=example", "attribute": "cn" })
        }
        (true, "loggly") => json!({ "key": "k" }),
        (true, "opentelemetry") => json!({ "traces_endpoint": "http://example.com/v1/traces" }),
        (true, "proxy-cache") => json!({ "strategy": "memory" }),
        (true, "rate-limiting") => json!({ "minute": 5 }),
        (true, "redirect") => json!({ "location": "http://example.com" }),
        (true, "response-ratelimiting") => json!({ "limits": { "sms": { "minute": 10 } } }),
        (true, "tcp-log" | "udp-log") => json!({ "host": "example.com", "port": 514 }),
        (true, _) => json!({}),
        (false, "services") => json!({ "host": "example.com" }),
        (false, "routes") => json!({ "paths": ["/"] }),
        (false, "upstreams") => json!({ "name": "example.upstream" }),
        (false, "targets") => json!({ "target": "10.0.0.1:80", "upstream": { "id": ID } }),
        (false, "consumers") => json!({ "username": "alice" }),
        (false, "certificates") => json!({ "cert": X509_V1_CERT, "key": X509_V1_KEY }),
        (false, "snis") => json!({ "name": "example.com", "certificate": { "id": ID } }),
        // A CA certificate must be one (Kong's CA basic constraint check).
        (false, "ca_certificates") => json!({ "cert": sluice_testkit::TestCa::new("ca.test").pem }),
        (false, "keyauth_credentials") => with(json!({ "key": "k" })),
        (false, "acls") => with(json!({ "group": "g" })),
        (false, "hmacauth_credentials") => with(json!({ "username": "u" })),
        (false, "basicauth_credentials") => with(json!({ "username": "u", "password": "p" })),
        (false, "oauth2_credentials") => with(json!({ "name": "app" })),
        (false, _) => owned,
    }
}

/// A valid value of a field, for the entity checks that need it set.
fn sample(_name: &str, path: &str, row: &Row) -> Value {
    let leaf = path.rsplit('.').next().unwrap_or_default();
    match leaf {
        "client_certificate" => return json!({ "id": ID }),
        "ca_certificates" => return json!([ID]),
        "cert_alt" => return json!(X509_V1_CERT),
        "key_alt" => return json!(X509_V1_KEY),
        "path" => return json!("/x"),
        _ => {}
    }
    let first = row.one_of.as_ref().and_then(|l| l.get(0)).cloned();
    match row.ty.as_str() {
        "string" => first.unwrap_or(json!("x")),
        "integer" | "number" => first.unwrap_or(json!(1)),
        "boolean" => json!(true),
        "array" | "set" => json!(["x"]),
        "foreign" => json!({ "id": ID }),
        _ => json!({}),
    }
}

/// Probes for the custom validators the reader could not run (they go through OpenResty): (name,
/// path, bad value, Kong's message), the message as the validator in Kong 3.9.1 words it.
const CUSTOM: &[(&str, &str, &str, &str)] = &[];

/// What `validate_header_name` (kong/tools/http.lua) answers a name with a space.
const BAD_HEADER: &str =
    "bad header name 'a b', allowed characters are A-Z, a-z, 0-9, '_', and '-'";

fn custom(name: &str, path: &str, row: &Row) -> Option<(Value, String)> {
    let hand = CUSTOM
        .iter()
        .find(|(n, p, _, _)| *n == name && *p == path)
        .map(|(_, _, bad, msg)| (json!(bad), msg.to_string()));
    if hand.is_some() {
        return hand;
    }
    let custom = &row.checks.iter().find(|(k, _)| k == "custom")?.1;
    let (bad, msg) = match custom["name"].as_str()? {
        "_M.validate_header_name" => ("a b", BAD_HEADER),
        "validate_ip_or_cidr" => ("x", "invalid ip or cidr range: 'x'"),
        "validate_url" => ("x", "missing host in url"),
        "validate_asterisk_or_regex" => ("[", "'[' is not a valid regex"),
        "validate_headers" => ("a b:c", "'a b' is not a valid header"),
        _ => return None,
    };
    Some((json!(bad), msg.to_string()))
}

/// The message at Kong's dotted `path` in Sluice's `fields`: a number is a 1-based array position
/// (Kong's answer is an array there; an object keyed by the number is read too), and `@entity` holds
/// a list of messages in Kong's answer (a single one is read too).
fn messages_at(fields: &Value, path: &str) -> Vec<String> {
    let mut at = fields;
    for part in path.split('.') {
        let next = match (at, part.parse::<usize>()) {
            (Value::Array(a), Ok(i)) => a.get(i.wrapping_sub(1)),
            (Value::Object(m), _) => m.get(part),
            _ => None,
        };
        match next {
            Some(v) => at = v,
            None => return Vec::new(),
        }
    }
    match at {
        Value::String(s) => vec![s.clone()],
        Value::Array(list) => list
            .iter()
            .filter_map(|v| v.as_str().map(String::from))
            .collect(),
        _ => Vec::new(),
    }
}

/// What differs between Kong's answer to `probe` and Sluice's (`status`, `answer`).
fn compare(probe: &Probe, status: u16, answer: &Value) -> Vec<String> {
    if status != 400 {
        return vec![format!("{}: {status}, Kong 400", probe.label)];
    }
    let mut out = Vec::new();
    for (path, want) in &probe.errors {
        let got = messages_at(&answer["fields"], path);
        if got.is_empty() {
            let fields = &answer["fields"];
            out.push(format!(
                "{} at {path}: nothing, Kong {want:?}; {fields}",
                probe.label
            ));
        } else if !got.iter().any(|g| same_message(g, want)) {
            out.push(format!("{} at {path}: {got:?}, Kong {want:?}", probe.label));
        }
    }
    out
}

/// Equal messages; `expected one of:` lists compared as sets (some of Kong's are in hash order).
fn same_message(a: &str, b: &str) -> bool {
    let list = |s: &str| {
        let mut l: Vec<String> = s.split(", ").map(String::from).collect();
        l.sort();
        l
    };
    let prefix = "expected one of: ";
    match (a.strip_prefix(prefix), b.strip_prefix(prefix)) {
        (Some(x), Some(y)) => list(x) == list(y),
        _ => a == b,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_kong_check_refuses_with_kongs_message() {
    let gw = Gateway::builder(BIN)
        .config_yaml("_format_version: \"3.0\"\n")
        .start();
    let inputs = Inputs {
        base: &base,
        sample: &sample,
        custom: &custom,
    };
    let mut plugins = rows_of("kong-3.9-plugin-schemas.txt");
    // DB-less, Kong refuses every oauth2 plugin (it stores tokens), and so does Sluice.
    plugins.retain(|(name, _), _| name != "oauth2");
    let mut all = probes(&plugins, true, &inputs);
    all.extend(probes(
        &rows_of("kong-3.9-entity-schemas.txt"),
        false,
        &inputs,
    ));
    let url = |p: &Probe| {
        let to = if p.plugin { "plugins" } else { &p.name };
        gw.admin_url(&format!("/schemas/{to}/validate"))
    };
    let mut found = Vec::new();
    let mut names: Vec<(&str, bool)> = all.iter().map(|p| (p.name.as_str(), p.plugin)).collect();
    names.dedup();
    for (name, plugin) in names {
        let input = if plugin {
            json!({ "name": name, "config": base(name, true) })
        } else {
            base(name, false)
        };
        let to = if plugin { "plugins" } else { name };
        let (status, answer) = send_json(
            "POST",
            &gw.admin_url(&format!("/schemas/{to}/validate")),
            Some(input),
        )
        .await;
        if status != 200 {
            found.push(format!("{name}: the valid base is refused: {answer}"));
        }
    }
    for probe in &all {
        let (status, answer) = send_json("POST", &url(probe), Some(probe.input.clone())).await;
        let differences = compare(probe, status, &answer);
        match (kept(probe), differences.is_empty()) {
            (false, _) => found.extend(differences),
            // An allow-listed difference that is gone must leave the list (and its row the docs).
            (true, true) => found.push(format!(
                "{}: kept in KEPT, yet answers as Kong",
                probe.label
            )),
            (true, false) => {}
        }
    }
    assert!(all.len() > 300, "only {} probes", all.len());
    assert!(
        found.is_empty(),
        "{} of {} probes differ from Kong:\n{}",
        found.len(),
        all.len(),
        found.join("\n")
    );
}
