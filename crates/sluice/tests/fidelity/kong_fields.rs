//! The fields Kong 3.9.1's schemas define, read from its source (`kong/db/schema/entities/*.lua`,
//! `kong/plugins/*/daos.lua`; plugin configs from the table `kong-3.9-plugin-schemas.txt`, read from
//! `kong/plugins/*/schema.lua`, shorthands included): what Kong accepts in a declarative file or a
//! `POST /config`. A field outside these lists is one Kong refuses (`unknown
//! field`). The four fields Kong added in 3.10 that Sluice has ([`SINCE_3_10`]) are not here: Sluice keeps
//! them out of a config, and so of its export, unless set (docs/differences.md, "Declarative config").

use super::kong_defaults::{kong_rows, Row};
use serde_json::Value;
use std::collections::BTreeMap;

/// Kong 3.9.1's plugin config fields by (plugin, path), from `kong-3.9-plugin-schemas.txt`.
type Table = BTreeMap<(String, String), Row>;

/// The fields of each entity kind (the traditional and traditional_compatible router's routes).
#[rustfmt::skip]
pub fn entity(kind: &str) -> Option<&'static [&'static str]> {
    Some(match kind {
        "services" => &[
            "id", "created_at", "updated_at", "name", "retries", "protocol", "host", "port", "path",
            "connect_timeout", "write_timeout", "read_timeout", "tags", "client_certificate",
            "tls_verify", "tls_verify_depth", "ca_certificates", "enabled",
        ],
        "routes" => &[
            "id", "created_at", "updated_at", "name", "protocols", "https_redirect_status_code",
            "strip_path", "preserve_host", "request_buffering", "response_buffering", "tags",
            "service", "snis", "sources", "destinations", "methods", "hosts", "paths", "headers",
            "regex_priority", "path_handling",
        ],
        "upstreams" => &[
            "id", "created_at", "updated_at", "name", "algorithm", "hash_on", "hash_fallback",
            "hash_on_header", "hash_fallback_header", "hash_on_cookie", "hash_on_cookie_path",
            "hash_on_query_arg", "hash_fallback_query_arg", "hash_on_uri_capture",
            "hash_fallback_uri_capture", "slots", "healthchecks", "tags", "host_header",
            "client_certificate", "use_srv_name",
        ],
        "targets" => &["id", "created_at", "updated_at", "upstream", "target", "weight", "tags"],
        "consumers" => &["id", "created_at", "updated_at", "username", "custom_id", "tags"],
        "certificates" => &["id", "created_at", "updated_at", "cert", "key", "cert_alt", "key_alt", "tags"],
        "snis" => &["id", "name", "created_at", "updated_at", "tags", "certificate"],
        "ca_certificates" => &["id", "created_at", "updated_at", "cert", "cert_digest", "tags"],
        "plugins" => &[
            "id", "name", "instance_name", "created_at", "updated_at", "route", "service", "consumer",
            "config", "protocols", "enabled", "tags",
        ],
        // `ttl`: the schema says `ttl = true`; a declarative entry keeps it (declarative_config.lua).
        "keyauth_credentials" => &["id", "created_at", "consumer", "key", "tags", "ttl"],
        "basicauth_credentials" => &["id", "created_at", "consumer", "username", "password", "tags"],
        "acls" => &["id", "created_at", "consumer", "group", "tags"],
        "jwt_secrets" => &[
            "id", "created_at", "consumer", "key", "secret", "rsa_public_key", "algorithm", "tags",
        ],
        "hmacauth_credentials" => &["id", "created_at", "consumer", "username", "secret", "tags"],
        "oauth2_credentials" => &[
            "id", "created_at", "consumer", "name", "client_id", "client_secret", "hash_secret",
            "redirect_uris", "tags", "client_type",
        ],
        _ => return None,
    })
}

/// Plugin fields of Kong 3.10 that Sluice has: (plugin, field). Kong 3.9 refuses them.
pub const SINCE_3_10: &[(&str, &str)] = &[
    ("cors", "allow_origin_absent"),
    ("prometheus", "wasm_metrics"),
    ("session", "hash_subject"),
    ("session", "store_metadata"),
];

/// The fields of a flat declarative document (an export) that Kong 3.9 would refuse, as `kind[i].field`.
/// Top-level keys other than entity kinds, and plugins this table does not know, are reported too.
pub fn refused(doc: &Value) -> Vec<String> {
    let plugins = kong_rows();
    let mut out = Vec::new();
    for (kind, list) in doc.as_object().expect("a document") {
        if matches!(kind.as_str(), "_format_version" | "_transform") {
            continue;
        }
        let Some(fields) = entity(kind) else {
            out.push(kind.clone());
            continue;
        };
        for (i, e) in list.as_array().expect("a list").iter().enumerate() {
            let e = e.as_object().expect("an entity");
            let at = format!("{kind}[{i}]");
            out.extend(unknown(e, fields, &at));
            if kind != "plugins" {
                continue;
            }
            let name = e["name"].as_str().unwrap_or_default();
            if !plugins.keys().any(|(p, _)| p == name) {
                out.push(format!("{at}: plugin {name} not in the table"));
                continue;
            }
            let config = e.get("config").unwrap_or(&Value::Null);
            let at = format!("{at}.config");
            config_refused(&plugins, name, "", config, &at, &mut out);
        }
    }
    out
}

/// The keys of a plugin's `config` (or of a record in it, at table path `prefix`) that Kong 3.9.1's
/// schema lacks, following records, arrays of records and maps of records down.
fn config_refused(
    table: &Table,
    plugin: &str,
    prefix: &str,
    v: &Value,
    at: &str,
    out: &mut Vec<String>,
) {
    let Value::Object(m) = v else { return };
    for (k, v) in m {
        let path = if prefix.is_empty() {
            k.clone()
        } else {
            format!("{prefix}.{k}")
        };
        let here = format!("{at}.{k}");
        let row = |p: &str| table.get(&(plugin.to_string(), p.to_string()));
        let Some(field) = row(&path) else {
            out.push(here);
            continue;
        };
        let each: Vec<(&Value, String)> = match (v, field.ty.as_str()) {
            (Value::Object(_), "record") => vec![(v, path)],
            (Value::Array(items), "array" | "set") => {
                items.iter().map(|x| (x, format!("{path}[]"))).collect()
            }
            (Value::Object(values), "map") => values
                .values()
                .map(|x| (x, format!("{path}{{}}")))
                .collect(),
            _ => Vec::new(),
        };
        for (x, p) in each {
            if row(&p).is_some_and(|r| r.ty == "record") {
                config_refused(table, plugin, &p, x, &here, out);
            }
        }
    }
}

/// The keys of `e` outside `known`, as `at.key`.
fn unknown(e: &serde_json::Map<String, Value>, known: &[&str], at: &str) -> Vec<String> {
    e.keys()
        .filter(|k| !known.contains(&k.as_str()))
        .map(|k| format!("{at}.{k}"))
        .collect()
}
