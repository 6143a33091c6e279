//! Kong's entity schemas (fields, defaults, rules) expressed in the [`crate::schema`] language.
//!
//! Every schema accepts `id`, `created_at` and `updated_at` so that an exported config re-imports unchanged.
//! Foreign keys (`service`, `route`, `consumer`, `upstream`, `certificate`) have already been resolved to
//! `{"id": ...}` by the reference pass when these schemas run.

use crate::schema::{EntityCheck, Field, FieldError, Schema};
use serde_json::{Map, Value};

mod entity_checks;
mod grpc;
pub mod typedefs;

fn common(mut fields: Vec<(&'static str, Field)>) -> Vec<(&'static str, Field)> {
    fields.insert(0, ("id", Field::string().len_min(0).check(typedefs::uuid)));
    fields.push((
        "tags",
        Field::set(Field::string().required().len_min(1).check(typedefs::tag)),
    ));
    fields.push(("created_at", Field::integer().check(typedefs::timestamp)));
    fields.push(("updated_at", Field::integer().check(typedefs::timestamp)));
    fields
}

fn foreign() -> Field {
    Field::record(Schema::new(vec![("id", Field::string().required())]))
}

fn timeout() -> Field {
    Field::integer().default(60000).between(1.0, 2147483646.0)
}

/// Kong OSS's protocols (`kong/constants.lua`), sorted as its error message lists them; `ws` and `wss`
/// are Kong Enterprise's (WebSocket upgrades are proxied on `http` and `https` routes).
const PROTOCOLS: &[&str] = &[
    "grpc",
    "grpcs",
    "http",
    "https",
    "tcp",
    "tls",
    "tls_passthrough",
    "udp",
];

/// `services`.
pub fn service() -> Schema {
    Schema::new(common(vec![
        ("name", Field::string().check(typedefs::utf8_name)),
        (
            "protocol",
            Field::string().default("http").one_of(PROTOCOLS),
        ),
        (
            "host",
            Field::string().required().check(typedefs::plain_host),
        ),
        ("port", Field::integer().default(80).between(0.0, 65535.0)),
        ("path", Field::string().check(typedefs::path)),
        ("retries", Field::integer().default(5).between(0.0, 32767.0)),
        ("connect_timeout", timeout()),
        ("write_timeout", timeout()),
        ("read_timeout", timeout()),
        ("tls_verify", Field::boolean()),
        ("tls_verify_depth", Field::integer().between(0.0, 64.0)),
        (
            "ca_certificates",
            Field::array(Field::string().len_min(0).check(typedefs::uuid)),
        ),
        ("client_certificate", foreign()),
        ("enabled", Field::boolean().default(true)),
    ]))
    .with_entity_checks(entity_checks::services())
}

/// `routes`.
pub fn route() -> Schema {
    Schema::new(common(vec![
        ("name", Field::string().check(typedefs::utf8_name)),
        (
            "protocols",
            Field::set(Field::string().one_of(PROTOCOLS))
                .default(serde_json::json!(["http", "https"]))
                .len_min(1),
        ),
        ("methods", Field::set(Field::string().check(check_method))),
        (
            "hosts",
            Field::array(Field::string().check(check_route_host)),
        ),
        (
            "paths",
            Field::array(Field::string().check(check_route_path)),
        ),
        (
            "headers",
            Field::map(Field::array(Field::string()))
                .keys(Field::string().check(typedefs::route_header_key)),
        ),
        (
            "snis",
            Field::set(Field::string().check(typedefs::wildcard_host)),
        ),
        ("sources", cidr_ports()),
        ("destinations", cidr_ports()),
        ("strip_path", Field::boolean().default(true)),
        ("preserve_host", Field::boolean().default(false)),
        ("regex_priority", Field::integer().default(0)),
        (
            "path_handling",
            Field::string().default("v0").one_of(&["v0", "v1"]),
        ),
        (
            "https_redirect_status_code",
            Field::integer()
                .default(426)
                .one_of_int(&[426, 301, 302, 307, 308]),
        ),
        ("request_buffering", Field::boolean().default(true)),
        ("response_buffering", Field::boolean().default(true)),
        ("service", foreign()),
    ]))
    .with_check(route_matchers)
    .with_subschema(grpc::route_defaults)
    .with_check(grpc::route_checks)
}

/// A stream route's `sources` / `destinations`: records of an IP or CIDR range and a port, at least one.
fn cidr_ports() -> Field {
    let entry = Schema::new(vec![
        ("ip", Field::string().check(check_ip_or_cidr)),
        ("port", Field::integer().between(0.0, 65535.0)),
    ])
    .with_entity_checks([EntityCheck::AtLeastOneOf(&["ip", "port"])]);
    Field::set(Field::record(entry))
}

fn check_ip_or_cidr(v: &Value) -> Result<(), String> {
    let s = v.as_str().unwrap_or_default();
    let ok = s.parse::<std::net::IpAddr>().is_ok() || s.parse::<ipnet::IpNet>().is_ok();
    ok.then_some(())
        .ok_or_else(|| format!("invalid ip or cidr range: '{s}'"))
}

/// `upstreams`.
pub fn upstream() -> Schema {
    const HASH: &[&str] = &[
        "none",
        "consumer",
        "ip",
        "header",
        "cookie",
        "path",
        "query_arg",
        "uri_capture",
    ];
    Schema::new(common(vec![
        (
            "name",
            Field::string().required().check(typedefs::upstream_name),
        ),
        (
            "algorithm",
            Field::string().default("round-robin").one_of(&[
                "round-robin",
                "consistent-hashing",
                "least-connections",
                "latency",
            ]),
        ),
        ("hash_on", Field::string().default("none").one_of(HASH)),
        (
            "hash_fallback",
            Field::string().default("none").one_of(HASH),
        ),
        (
            "hash_on_header",
            Field::string().check(typedefs::header_name),
        ),
        (
            "hash_fallback_header",
            Field::string().check(typedefs::header_name),
        ),
        ("hash_on_cookie", Field::string()),
        (
            "hash_on_cookie_path",
            Field::string().default("/").check(typedefs::path),
        ),
        ("hash_on_query_arg", Field::string()),
        ("hash_fallback_query_arg", Field::string()),
        ("hash_on_uri_capture", Field::string()),
        ("hash_fallback_uri_capture", Field::string()),
        (
            "slots",
            Field::integer().default(10000).between(10.0, 65536.0),
        ),
        (
            "host_header",
            Field::string().check(typedefs::host_with_optional_port),
        ),
        ("client_certificate", foreign()),
        ("healthchecks", Field::record(healthchecks())),
        ("use_srv_name", Field::boolean().default(false)),
    ]))
    .with_entity_checks(entity_checks::upstreams())
}

fn healthchecks() -> Schema {
    let statuses = |v: Value| Field::array(Field::integer().between(100.0, 999.0)).default(v);
    let counter = || Field::integer().default(0).between(0.0, 255.0);
    let healthy = |active: bool| {
        let mut f = vec![
            (
                "http_statuses",
                statuses(serde_json::json!(if active {
                    vec![200, 302]
                } else {
                    vec![
                        200, 201, 202, 203, 204, 205, 206, 207, 208, 226, 300, 301, 302, 303, 304,
                        305, 306, 307, 308,
                    ]
                })),
            ),
            ("successes", counter()),
        ];
        if active {
            f.insert(
                0,
                ("interval", Field::number().default(0).between(0.0, 65535.0)),
            );
        }
        Schema::new(f)
    };
    let unhealthy = |active: bool| {
        let mut f = vec![
            (
                "http_statuses",
                statuses(serde_json::json!(if active {
                    vec![429, 404, 500, 501, 502, 503, 504, 505]
                } else {
                    vec![429, 500, 503]
                })),
            ),
            ("tcp_failures", counter()),
            ("timeouts", counter()),
            ("http_failures", counter()),
        ];
        if active {
            f.insert(
                0,
                ("interval", Field::number().default(0).between(0.0, 65535.0)),
            );
        }
        Schema::new(f)
    };
    let kinds: &'static [&'static str] = &["tcp", "http", "https", "grpc", "grpcs"];
    Schema::new(vec![
        (
            "active",
            Field::record(Schema::new(vec![
                ("type", Field::string().default("http").one_of(kinds)),
                ("timeout", Field::number().default(1).between(0.0, 65535.0)),
                (
                    "concurrency",
                    Field::integer().default(10).between(1.0, 2147483648.0),
                ),
                (
                    "http_path",
                    Field::string().default("/").check(typedefs::path),
                ),
                ("https_verify_certificate", Field::boolean().default(true)),
                ("https_sni", Field::string().check(typedefs::sni)),
                (
                    "headers",
                    Field::map(Field::array(Field::string()))
                        .keys(Field::string().check(typedefs::header_name)),
                ),
                ("healthy", Field::record(healthy(true))),
                ("unhealthy", Field::record(unhealthy(true))),
            ])),
        ),
        (
            "passive",
            Field::record(Schema::new(vec![
                ("type", Field::string().default("http").one_of(kinds)),
                ("healthy", Field::record(healthy(false))),
                ("unhealthy", Field::record(unhealthy(false))),
            ])),
        ),
        ("threshold", Field::number().default(0).between(0.0, 100.0)),
    ])
}

/// `targets`.
pub fn target() -> Schema {
    let mut fields = common(vec![
        ("upstream", foreign()),
        ("target", Field::string().required()),
        (
            "weight",
            Field::integer().default(100).between(0.0, 65535.0),
        ),
    ]);
    // Kong keeps a target's timestamps with milliseconds: fractional seconds (2.x exports them so).
    for (name, field) in fields.iter_mut() {
        if matches!(*name, "created_at" | "updated_at") {
            *field = Field::number().check(typedefs::timestamp);
        }
    }
    Schema::new(fields)
}

/// `consumers`.
pub fn consumer() -> Schema {
    Schema::new(common(vec![
        ("username", Field::string()),
        ("custom_id", Field::string()),
    ]))
    .with_entity_checks(vec![EntityCheck::AtLeastOneOf(&["custom_id", "username"])])
}

/// `keyauth_credentials`.
pub fn keyauth_credential() -> Schema {
    Schema::new(common(vec![
        ("consumer", foreign()),
        ("key", Field::string()),
        // The Unix time the key expires, as `kong config db_export` writes it (Kong's DB-less node
        // hides a key once that time has passed).
        ("ttl", Field::integer().between(0.0, 4294967295.0)),
    ]))
}

/// `basicauth_credentials`.
pub fn basicauth_credential() -> Schema {
    Schema::new(common(vec![
        ("consumer", foreign()),
        ("username", Field::string().required()),
        ("password", Field::string().required()),
    ]))
}

/// `hmacauth_credentials`; a missing `secret` is generated after hashing ([`super::typed::Assembler::add`]).
pub fn hmacauth_credential() -> Schema {
    Schema::new(common(vec![
        ("consumer", foreign()),
        ("username", Field::string().required()),
        ("secret", Field::string()),
    ]))
}

/// `acls`.
pub fn acl() -> Schema {
    Schema::new(common(vec![
        ("consumer", foreign()),
        ("group", Field::string().required()),
    ]))
}

/// The algorithms of `jwt_secrets.algorithm`, Kong's list.
pub const JWT_ALGORITHMS: &[&str] = &[
    "HS256", "HS384", "HS512", "RS256", "RS384", "RS512", "ES256", "ES384", "ES512", "PS256",
    "PS384", "PS512", "EdDSA",
];

/// `jwt_secrets`. `key` and `secret` are generated when left out (`typed::Assembler::add`). Kong requires a public key
/// that parses for the RS, PS and EdDSA algorithms (not for ES: an ES credential without one fails each
/// request with "Invalid key/secret").
pub fn jwt_secret() -> Schema {
    Schema::new(common(vec![
        ("consumer", foreign()),
        ("key", Field::string()),
        ("secret", Field::string()),
        ("rsa_public_key", Field::string()),
        (
            "algorithm",
            Field::string().default("HS256").one_of(JWT_ALGORITHMS),
        ),
    ]))
    .with_check(|m| {
        let alg = m["algorithm"].as_str().unwrap_or("HS256");
        if !matches!(&alg[..2], "RS" | "PS" | "Ed") {
            return Ok(());
        }
        let message = match m["rsa_public_key"].as_str() {
            None => "required field missing".to_string(),
            Some(pem) => match sluice_tls::public_key(pem) {
                Ok(_) => return Ok(()),
                Err(e) => e,
            },
        };
        Err(vec![
            FieldError::new("rsa_public_key", message),
            FieldError::entity("failed conditional validation given value of field 'algorithm'"),
        ])
    })
}

/// `oauth2_credentials`. `client_id` and `client_secret` are generated when left out, and the secret is
/// hashed when `hash_secret` is true (`typed::Assembler::add`, after the config hash).
pub fn oauth2_credential() -> Schema {
    Schema::new(common(vec![
        ("consumer", foreign()),
        ("name", Field::string().required()),
        ("client_id", Field::string()),
        ("client_secret", Field::string()),
        ("hash_secret", Field::boolean().required().default(false)),
        (
            "redirect_uris",
            Field::array(Field::string().check(check_redirect_uri)),
        ),
        (
            "client_type",
            Field::string()
                .required()
                .default("confidential")
                .one_of(&["confidential", "public"]),
        ),
    ]))
}

/// Kong's rule for a redirect URI: it parses with a scheme and a host, and has no fragment.
fn check_redirect_uri(v: &Value) -> Result<(), String> {
    let uri = v.as_str().unwrap_or_default();
    let scheme_ok = uri.split_once(':').is_some_and(|(scheme, _)| {
        scheme.starts_with(|c: char| c.is_ascii_alphanumeric())
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
    });
    let host = uri
        .split_once("://")
        .map(|(_, rest)| rest.split(['/', '?', '#']).next().unwrap_or_default())
        .map(|authority| authority.rsplit('@').next().unwrap_or_default())
        .map(|hostport| match hostport.strip_prefix('[') {
            Some(v6) => v6.split(']').next().unwrap_or_default(),
            None => hostport.split(':').next().unwrap_or_default(),
        });
    if !scheme_ok || host.is_none_or(str::is_empty) {
        return Err(format!("cannot parse '{uri}'"));
    }
    if uri.contains('#') {
        return Err(format!("fragment not allowed in '{uri}'"));
    }
    Ok(())
}

/// `plugins`; `config` is validated separately with the plugin's own schema.
pub fn plugin() -> Schema {
    Schema::new(common(vec![
        ("name", Field::string().required()),
        ("instance_name", Field::string()),
        ("config", Field::any()),
        ("service", foreign()),
        ("route", foreign()),
        ("consumer", foreign()),
        ("enabled", Field::boolean().default(true)),
        (
            "protocols",
            Field::set(Field::string().one_of(PROTOCOLS))
                .default(serde_json::json!(["grpc", "grpcs", "http", "https"])),
        ),
    ]))
}

/// `certificates`.
pub fn certificate() -> Schema {
    Schema::new(common(vec![
        ("cert", Field::string().required().check(check_pem)),
        ("key", Field::string().required().check(check_pem)),
        ("cert_alt", Field::string().check(check_pem)),
        ("key_alt", Field::string().check(check_pem)),
        ("snis", Field::any()),
    ]))
    .with_check(certificate_pairs)
}

/// Kong's certificate checks that need the crypto: each key matches its certificate, and an alternate pair
/// is complete and of the other key type. Runs only when the PEM fields passed their own checks.
fn certificate_pairs(m: &Map<String, Value>) -> Result<(), Vec<FieldError>> {
    let text = |k: &str| m.get(k).and_then(Value::as_str);
    let (Some(cert), Some(key)) = (text("cert"), text("key")) else {
        return Ok(());
    };
    let errors: Vec<FieldError> =
        sluice_tls::check_certificate(cert, key, text("cert_alt"), text("key_alt"))
            .into_iter()
            .map(|(field, message)| match field {
                Some(f) => FieldError::new(f, message),
                None => FieldError::entity(message),
            })
            .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

/// `snis`.
pub fn sni() -> Schema {
    Schema::new(common(vec![
        (
            "name",
            Field::string().required().check(typedefs::wildcard_host),
        ),
        ("certificate", foreign()),
    ]))
}

/// `ca_certificates`.
pub fn ca_certificate() -> Schema {
    Schema::new(common(vec![
        ("cert", Field::string().required().check(check_pem)),
        ("cert_digest", Field::string()),
    ]))
    .with_check(ca_constraints)
}

/// Kong's entity check of a CA certificate: one certificate, not expired, a CA by its basic constraints.
fn ca_constraints(m: &Map<String, Value>) -> Result<(), Vec<FieldError>> {
    let Some(cert) = m.get("cert").and_then(Value::as_str) else {
        return Ok(());
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    sluice_tls::check_ca_certificate(cert, now).map_err(|e| vec![FieldError::entity(e)])
}

/// Kong's `typedefs.host`: an IP address or a host name of valid labels (also used by plugins' `host`).
pub fn check_host(v: &Value) -> Result<(), String> {
    let s = v.as_str().unwrap_or_default();
    let ok = !s.is_empty()
        && s.len() <= 253
        && (s.parse::<std::net::IpAddr>().is_ok()
            || s.split('.').all(|l| {
                !l.is_empty()
                    && l.len() <= 63
                    && l.chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
            }));
    ok.then_some(())
        .ok_or_else(|| format!("invalid hostname: {s}"))
}

fn check_route_host(v: &Value) -> Result<(), String> {
    let s = v.as_str().unwrap_or_default();
    let (name, port) = match s.rsplit_once(':') {
        Some((h, p)) if !h.contains(':') || h.ends_with(']') => (h, Some(p)),
        _ => (s, None),
    };
    if let Some(p) = port {
        if p.parse::<u16>().is_err() {
            return Err(format!("invalid port number: {s}"));
        }
    }
    if name.matches('*').count() > 1 {
        return Err("invalid wildcard: must have at most one wildcard".into());
    }
    if name.contains('*') && !(name.starts_with("*.") || name.ends_with(".*")) {
        return Err("invalid wildcard: must be placed at leftmost or rightmost label".into());
    }
    let bare = name
        .trim_start_matches("*.")
        .trim_end_matches(".*")
        .trim_matches(|c| c == '[' || c == ']');
    check_host(&Value::from(bare))
}

fn check_route_path(v: &Value) -> Result<(), String> {
    let s = v.as_str().unwrap_or_default();
    if let Some(re) = s.strip_prefix('~') {
        if !re.starts_with('/') {
            return Err("should start with: / (fixed path) or ~/ (regex path)".into());
        }
        return regex::Regex::new(re)
            .map(|_| ())
            .map_err(|e| format!("invalid regex: '{re}' ({e})"));
    }
    if !s.starts_with('/') {
        return Err("should start with: / (fixed path) or ~/ (regex path)".into());
    }
    if s.contains("//") {
        return Err("must not have empty segments".into());
    }
    // Kong's `validate_path_with_regexes`: a prefix path must be in the form the router compares.
    let normalized = crate::uri_path::normalize(s);
    if normalized != s {
        return Err(format!(
            "non-normalized path, consider use '{normalized}' instead"
        ));
    }
    Ok(())
}

fn check_method(v: &Value) -> Result<(), String> {
    let s = v.as_str().unwrap_or_default();
    let ok = !s.is_empty() && s.chars().all(|c| c.is_ascii_uppercase());
    ok.then_some(())
        .ok_or_else(|| format!("invalid value: {s}"))
}

fn check_pem(v: &Value) -> Result<(), String> {
    let s = v.as_str().unwrap_or_default();
    s.contains("-----BEGIN ")
        .then_some(())
        .ok_or_else(|| "invalid PEM: no BEGIN marker".into())
}

fn route_matchers(m: &Map<String, Value>) -> Result<(), Vec<FieldError>> {
    let mut errors = Vec::new();
    let protocols = m["protocols"].as_array().cloned().unwrap_or_default();
    let plain_http = protocols.iter().any(|p| p == "http");
    let http = plain_http || protocols.iter().any(|p| p == "https");
    let set = |k: &str| match &m[k] {
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
        _ => false,
    };
    if plain_http
        && !["methods", "hosts", "headers", "paths"]
            .iter()
            .any(|k| set(k))
    {
        errors.push(FieldError::entity(
            "must set one of 'methods', 'hosts', 'headers', 'paths' when 'protocols' is 'http'",
        ));
    } else if http
        && !["methods", "hosts", "headers", "paths", "snis"]
            .iter()
            .any(|k| set(k))
    {
        errors.push(FieldError::entity(
            "must set one of 'methods', 'hosts', 'headers', 'paths', 'snis' when 'protocols' is 'https'",
        ));
    }
    stream_matchers(&protocols, &set, &mut errors);
    errors.is_empty().then_some(()).ok_or(errors)
}

/// Kong's rules for `sources`, `destinations` and `snis`, by the route's kind (its first protocol, as Kong
/// picks the subschema): stream routes take no HTTP matcher and need one of their own; HTTP routes take no
/// addresses; `snis` need a TLS protocol.
fn stream_matchers(protocols: &[Value], set: &dyn Fn(&str) -> bool, errors: &mut Vec<FieldError>) {
    let is = |p: &Value, names: &[&str]| p.as_str().is_some_and(|p| names.contains(&p));
    const STREAM: &[&str] = &["tcp", "tls", "udp", "tls_passthrough"];
    let first = protocols.first();
    if first.is_some_and(|p| is(p, STREAM)) {
        for field in ["methods", "hosts", "paths", "headers"] {
            if set(field) {
                errors.push(FieldError::new(
                    field,
                    format!("cannot set '{field}' when 'protocols' is 'tcp', 'tls', 'tls_passthrough' or 'udp'"),
                ));
            }
        }
        let all = |names: &[&str]| protocols.iter().all(|p| is(p, names));
        if all(&["tcp", "tls", "udp"])
            && !["sources", "destinations", "snis"].iter().any(|k| set(k))
        {
            errors.push(FieldError::entity(
                "must set one of 'sources', 'destinations', 'snis' when 'protocols' is 'tcp', 'tls' or 'udp'",
            ));
        }
        if all(&["tls_passthrough"]) && !set("snis") {
            errors.push(FieldError::entity(
                "must set snis when 'protocols' is 'tls_passthrough'",
            ));
        }
    } else if first.is_some_and(|p| is(p, &["http", "https"])) {
        // gRPC routes get the same rule from their own subschema (`schemas/grpc.rs`).
        for field in ["sources", "destinations"] {
            if set(field) {
                errors.push(FieldError::new(
                    field,
                    format!("cannot set '{field}' when 'protocols' is 'http' or 'https'"),
                ));
            }
        }
    }
    let tls = ["grpcs", "https", "tls", "tls_passthrough"];
    if set("snis") && !protocols.iter().any(|p| is(p, &tls)) {
        errors.push(FieldError::new(
            "snis",
            "'snis' can only be set when 'protocols' is 'grpcs', 'https', 'tls' or 'tls_passthrough'",
        ));
    }
}
