//! rate-limiting's config: Kong's schema (with the deprecated flat `redis_*` fields), its cross-field rules,
//! and the typed config the plugin is built from.

use super::redis;
use super::window::PERIODS;
use serde::Deserialize;
use serde_json::{Map, Value};
use sluice_model::declarative::schemas::typedefs;
use sluice_model::schema::{Field, FieldError, Schema};

#[derive(Debug, Deserialize)]
pub(super) struct Config {
    pub(super) second: Option<f64>,
    pub(super) minute: Option<f64>,
    pub(super) hour: Option<f64>,
    pub(super) day: Option<f64>,
    pub(super) month: Option<f64>,
    pub(super) year: Option<f64>,
    /// `consumer` (default), `credential`, `ip`, `service`, `header`, `path`; each falls back to `ip`.
    pub(super) limit_by: String,
    pub(super) header_name: Option<String>,
    pub(super) path: Option<String>,
    /// Don't send the `RateLimit-*` / `X-RateLimit-*` headers.
    pub(super) hide_client_headers: bool,
    pub(super) error_code: u16,
    pub(super) error_message: String,
    pub(super) policy: String,
    pub(super) fault_tolerant: bool,
    /// Seconds between syncs of this node's counts to Redis; -1: count on Redis for every request.
    pub(super) sync_rate: f64,
    #[serde(flatten)]
    pub(super) redis: RedisFields,
}

/// Kong's `redis` record and the deprecated flat `redis_*` fields beside it (still accepted and exported by
/// Kong 3.x), as both rate-limiting plugins read them.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct RedisFields {
    #[serde(default)]
    redis: Option<redis::RedisConfig>,
    #[serde(flatten)]
    flat_redis: FlatRedis,
}

/// The deprecated flat `redis_*` fields.
#[derive(Debug, Default, Deserialize)]
struct FlatRedis {
    redis_host: Option<String>,
    redis_port: Option<u16>,
    redis_username: Option<String>,
    redis_password: Option<String>,
    redis_database: Option<i64>,
    redis_timeout: Option<u64>,
    redis_ssl: Option<bool>,
    redis_ssl_verify: Option<bool>,
}

impl RedisFields {
    /// The `redis` record, each flat `redis_*` field that is set overriding its record field (Kong's
    /// shorthands write through to the record; the record's own fields carry schema defaults).
    pub(crate) fn config(&self) -> redis::RedisConfig {
        let r = self.redis.clone().unwrap_or_default();
        let f = &self.flat_redis;
        redis::RedisConfig {
            host: f.redis_host.clone().or(r.host),
            port: f.redis_port.or(r.port),
            username: f.redis_username.clone().or(r.username),
            password: f.redis_password.clone().or(r.password),
            database: f.redis_database.or(r.database),
            timeout: f.redis_timeout.or(r.timeout),
            ssl: f.redis_ssl.or(r.ssl),
            ssl_verify: f.redis_ssl_verify.or(r.ssl_verify),
        }
    }
}

/// The config schema; `database`: the node has one, so `policy: cluster` is accepted.
pub(super) fn schema(database: bool) -> Schema {
    let limit = || Field::number().gt(0.0);
    Schema::new(
        vec![
            ("second", limit()),
            ("minute", limit()),
            ("hour", limit()),
            ("day", limit()),
            ("month", limit()),
            ("year", limit()),
            (
                "limit_by",
                Field::string().default("consumer").one_of(&[
                    "consumer",
                    "credential",
                    "ip",
                    "service",
                    "header",
                    "path",
                ]),
            ),
            ("header_name", Field::string().check(typedefs::header_name)),
            ("path", Field::string().check(typedefs::path)),
            (
                "policy",
                Field::string()
                    .default("local")
                    .one_of(&["local", "cluster", "redis"]),
            ),
            ("fault_tolerant", Field::boolean().default(true)),
            ("redis", Field::record(redis_schema())),
            ("hide_client_headers", Field::boolean().default(false)),
            (
                "error_code",
                Field::integer().default(429).between(100.0, 599.0),
            ),
            (
                "error_message",
                Field::string().default("API rate limit exceeded"),
            ),
            ("sync_rate", Field::number().default(-1)),
        ]
        .into_iter()
        .chain(flat_redis_fields())
        .collect(),
    )
    .with_subschema(redis_shorthands)
    .with_check(match database {
        true => check_with_database,
        false => check_without_database,
    })
}

/// Kong's shared `redis` record (kong/tools/redis/schema.lua), used by both rate-limiting plugins.
pub(crate) fn redis_schema() -> Schema {
    Schema::new(vec![
        ("host", Field::string().check(typedefs::plain_host)),
        ("port", Field::integer().default(6379).between(0.0, 65535.0)),
        (
            "timeout",
            Field::integer().default(2000).between(0.0, 2_147_483_646.0),
        ),
        ("username", Field::string()),
        ("password", Field::string().len_min(0)),
        ("database", Field::integer().default(0)),
        ("ssl", Field::boolean().default(false)),
        ("ssl_verify", Field::boolean().default(false)),
        ("server_name", Field::string().check(typedefs::sni)),
    ])
}

/// Kong's deprecated flat `redis_*` fields (shorthands of the `redis` record), still accepted and exported.
pub(crate) fn flat_redis_fields() -> Vec<(&'static str, Field)> {
    vec![
        ("redis_host", Field::string()),
        ("redis_port", Field::integer().between(0.0, 65535.0)),
        ("redis_username", Field::string()),
        ("redis_password", Field::string()),
        ("redis_database", Field::integer()),
        ("redis_timeout", Field::integer()),
        ("redis_ssl", Field::boolean()),
        ("redis_ssl_verify", Field::boolean()),
        ("redis_server_name", Field::string()),
    ]
}

/// Kong's shorthands of the `redis` record, as both rate-limiting plugins have them: each flat `redis_*`
/// field given writes through to its record field, and the flat fields then read the record back (a Kong
/// select fills them so), so stored and exported configs always have both in agreement. Kong 3.9 refuses a
/// document whose flat field and record field disagree; an export with the record's defaults beside the
/// flat fields given could not be loaded back into Kong.
pub(crate) fn redis_shorthands(_given: &Map<String, Value>, out: &mut Map<String, Value>) {
    let Some(Value::Object(mut record)) = out.remove("redis") else {
        return;
    };
    for (flat, _) in flat_redis_fields() {
        let field = &flat["redis_".len()..];
        match out.get(flat) {
            Some(v) if !v.is_null() => {
                record.insert(field.to_string(), v.clone());
            }
            _ => {
                let v = record.get(field).cloned().unwrap_or(Value::Null);
                out.insert(flat.to_string(), v);
            }
        }
    }
    out.insert("redis".to_string(), Value::Object(record));
}

fn check_with_database(m: &Map<String, Value>) -> Result<(), Vec<FieldError>> {
    check(m, true)
}

fn check_without_database(m: &Map<String, Value>) -> Result<(), Vec<FieldError>> {
    check(m, false)
}

/// The plugin-level error of Kong's `conditional` checks on `config.<field>`.
pub(crate) fn conditional(field: &str) -> FieldError {
    FieldError::plugin_check(format!(
        "failed conditional validation given value of field 'config.{field}'"
    ))
}

/// Kong's cross-field rules, plus this build's policy limits.
fn check(m: &Map<String, Value>, database: bool) -> Result<(), Vec<FieldError>> {
    let set: Vec<(&str, f64)> = PERIODS
        .iter()
        .filter_map(|p| m[p.name()].as_f64().map(|v| (p.name(), v)))
        .collect();
    if set.is_empty() {
        return Err(vec![FieldError::plugin_check(
            "at least one of these fields must be non-empty: 'config.second', 'config.minute', 'config.hour', 'config.day', 'config.month', 'config.year'",
        )]);
    }
    let mut errors = Vec::new();
    for pair in set.windows(2) {
        let ((short, a), (long, b)) = (pair[0], pair[1]);
        if b < a {
            errors.push(FieldError::entity(format!(
                "The limit for {long}({b:.1}) cannot be lower than the limit for {short}({a:.1})"
            )));
        }
    }
    // Kong's rules for `sync_rate`: -1 (count on the shared store for every request), or a batching interval
    // of at least 0.02 s with the redis policy only.
    let sync_rate = m["sync_rate"].as_f64().filter(|r| *r != -1.0);
    match (m["policy"].as_str(), sync_rate) {
        (_, None) => {}
        (Some("redis"), Some(r)) if r < 0.02 => errors.push(FieldError::entity(
            "sync_rate must be greater than 0.02, or -1 to disable",
        )),
        (Some("redis"), Some(_)) => {}
        (_, Some(_)) => errors.push(FieldError::entity(
            "sync_rate can only be used with the redis policy",
        )),
    }
    match m["policy"].as_str() {
        Some("local") | None => {}
        Some("redis") => {
            let host = m["redis"].get("host").filter(|h| !h.is_null());
            if host.is_none() && m["redis_host"].is_null() {
                errors.push(FieldError::new("redis.host", "required field missing"));
                errors.push(conditional("policy"));
            }
        }
        Some("cluster") if database => {}
        Some(_) => errors.push(FieldError::new(
            "policy",
            "policy 'cluster' needs a database; this node runs without one (use 'local' or 'redis')",
        )),
    }
    match m["limit_by"].as_str() {
        Some("header") if m["header_name"].is_null() => errors.extend([
            FieldError::new("header_name", "required field missing"),
            conditional("limit_by"),
        ]),
        Some("path") if m["path"].is_null() => errors.extend([
            FieldError::new("path", "required field missing"),
            conditional("limit_by"),
        ]),
        _ => {}
    }
    errors.is_empty().then_some(()).ok_or(errors)
}

/// Kong's `limit_by`, decided once per config (each falls back to the client IP when its value is absent).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum LimitBy {
    Consumer,
    Credential,
    Ip,
    Service,
    Header,
    Path,
}

impl LimitBy {
    pub(super) fn parse(s: &str) -> LimitBy {
        match s {
            "consumer" => LimitBy::Consumer,
            "credential" => LimitBy::Credential,
            "service" => LimitBy::Service,
            "header" => LimitBy::Header,
            "path" => LimitBy::Path,
            _ => LimitBy::Ip,
        }
    }
}

#[cfg(test)]
mod tests;
