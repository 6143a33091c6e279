//! The fields Kong 3.9.1's schemas define, read from its source (`kong/db/schema/entities/*.lua`,
//! `kong/plugins/*/daos.lua`, `kong/plugins/*/schema.lua`, `kong/tools/redis/schema.lua`): what Kong accepts
//! in a declarative file or a `POST /config`. A field outside these lists is one Kong refuses (`unknown
//! field`). The four fields Kong added in 3.10 that Sluice has ([`SINCE_3_10`]) are not here: Sluice keeps
//! them out of a config, and so of its export, unless set (docs/differences.md, "Declarative config").

use serde_json::Value;

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
        _ => return None,
    })
}

/// The `config` fields of the plugins the fixtures use, shorthand fields included (Kong takes them on
/// input).
#[rustfmt::skip]
pub fn plugin(name: &str) -> Option<&'static [&'static str]> {
    Some(match name {
        "key-auth" => &[
            "key_names", "hide_credentials", "anonymous", "key_in_header", "key_in_query",
            "key_in_body", "run_on_preflight", "realm",
        ],
        "acl" => &["allow", "deny", "hide_groups_header", "always_use_authenticated_groups"],
        "cors" => &[
            "origins", "headers", "exposed_headers", "methods", "max_age", "credentials",
            "private_network", "preflight_continue",
        ],
        "jwt" => &[
            "uri_param_names", "cookie_names", "key_claim_name", "secret_is_base64",
            "claims_to_verify", "anonymous", "run_on_preflight", "maximum_expiration",
            "header_names", "realm",
        ],
        "prometheus" => &[
            "per_consumer", "status_code_metrics", "ai_metrics", "latency_metrics",
            "bandwidth_metrics", "upstream_health_metrics",
        ],
        "rate-limiting" => &[
            "second", "minute", "hour", "day", "month", "year", "limit_by", "header_name", "path",
            "policy", "fault_tolerant", "redis", "hide_client_headers", "error_code",
            "error_message", "sync_rate", "redis_host", "redis_port", "redis_password",
            "redis_username", "redis_ssl", "redis_ssl_verify", "redis_server_name", "redis_timeout",
            "redis_database",
        ],
        "request-termination" => &["status_code", "message", "content_type", "body", "echo", "trigger"],
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

/// `redis` of rate-limiting (`kong/tools/redis/schema.lua`).
#[rustfmt::skip]
const REDIS: &[&str] = &[
    "host", "port", "timeout", "username", "password", "database", "ssl", "ssl_verify", "server_name",
];

/// The fields of a flat declarative document (an export) that Kong 3.9 would refuse, as `kind[i].field`.
/// Top-level keys other than entity kinds, and plugins this table does not know, are reported too.
pub fn refused(doc: &Value) -> Vec<String> {
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
            let config = e["config"].as_object().expect("a config");
            match plugin(name) {
                Some(fields) => out.extend(unknown(config, fields, &format!("{at}.config"))),
                None => out.push(format!("{at}: plugin {name} not in the table")),
            }
            if let Some(Value::Object(redis)) = config.get("redis") {
                out.extend(unknown(redis, REDIS, &format!("{at}.config.redis")));
            }
        }
    }
    out
}

/// The keys of `e` outside `known`, as `at.key`.
fn unknown(e: &serde_json::Map<String, Value>, known: &[&str], at: &str) -> Vec<String> {
    e.keys()
        .filter(|k| !known.contains(&k.as_str()))
        .map(|k| format!("{at}.{k}"))
        .collect()
}
