//! response-ratelimiting's config: Kong's schema (named limits, each a record of periods), its rules, and the
//! typed config the plugin is built from.

use crate::builtin::rate_limiting::config::{
    flat_redis_fields, redis_schema, redis_shorthands, RedisFields,
};
use crate::builtin::rate_limiting::window::PERIODS;
use serde::Deserialize;
use serde_json::{Map, Value};
use sluice_model::schema::{Field, FieldError, Schema};
use std::collections::BTreeMap;

#[derive(Debug, Deserialize)]
pub(super) struct Config {
    /// The upstream's response header that reports usage (`name=n, ...`); removed before the client.
    pub(super) header_name: String,
    /// `consumer` (default), `credential` or `ip`; each falls back to the client IP.
    pub(super) limit_by: String,
    pub(super) policy: String,
    pub(super) fault_tolerant: bool,
    #[serde(flatten)]
    pub(super) redis: RedisFields,
    /// Refuse a request as soon as one of its limits is used up (before the upstream is asked).
    pub(super) block_on_first_violation: bool,
    /// Don't send `X-RateLimit-*` headers to the client.
    pub(super) hide_client_headers: bool,
    /// Limit name → limit per period.
    pub(super) limits: BTreeMap<String, BTreeMap<String, Option<f64>>>,
}

/// The config schema; `database`: the node has one, so `policy: cluster` is accepted (refused DB-less, as in
/// Kong).
pub(super) fn schema(database: bool) -> Schema {
    let limit = || Field::number().gt(0.0);
    let periods = Schema::new(PERIODS.iter().map(|p| (p.name(), limit())).collect())
        .with_check(check_periods);
    Schema::new(
        vec![
            ("header_name", Field::string().default("x-kong-limit")),
            (
                "limit_by",
                Field::string()
                    .default("consumer")
                    .one_of(&["consumer", "credential", "ip"]),
            ),
            (
                "policy",
                Field::string()
                    .default("local")
                    .one_of(&["local", "cluster", "redis"]),
            ),
            ("fault_tolerant", Field::boolean().default(true)),
            ("redis", Field::record(redis_schema())),
            ("block_on_first_violation", Field::boolean().default(false)),
            ("hide_client_headers", Field::boolean().default(false)),
            (
                "limits",
                Field::map(Field::record(periods).required())
                    .required()
                    .len_min(1),
            ),
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

/// Kong's rules for one limit: at least one period, and a longer period's limit not below a shorter one's.
fn check_periods(m: &Map<String, Value>) -> Result<(), Vec<FieldError>> {
    let set: Vec<(&str, f64)> = PERIODS
        .iter()
        .filter_map(|p| m.get(p.name())?.as_f64().map(|v| (p.name(), v)))
        .collect();
    if set.is_empty() {
        return Err(vec![FieldError::entity_check(
            "at least one of these fields must be non-empty: 'second', 'minute', 'hour', 'day', 'month', 'year'",
        )]);
    }
    let mut errors = Vec::new();
    for (i, (short, a)) in set.iter().enumerate() {
        for (long, b) in &set[i + 1..] {
            if b < a {
                errors.push(FieldError::entity(format!(
                    "the limit for {long}({b:.1}) cannot be lower than the limit for {short}({a:.1})"
                )));
            }
        }
    }
    errors.is_empty().then_some(()).ok_or(errors)
}

fn check_with_database(m: &Map<String, Value>) -> Result<(), Vec<FieldError>> {
    check_policy(m, true)
}

fn check_without_database(m: &Map<String, Value>) -> Result<(), Vec<FieldError>> {
    check_policy(m, false)
}

/// `redis` needs a host (the record's or the flat field); `cluster` needs a database.
fn check_policy(m: &Map<String, Value>, database: bool) -> Result<(), Vec<FieldError>> {
    match m["policy"].as_str() {
        Some("local") | None => Ok(()),
        Some("redis") => {
            let host = m["redis"].get("host").filter(|h| !h.is_null());
            match host.is_none() && m["redis_host"].is_null() {
                true => Err(vec![
                    FieldError::new("redis.host", "required field missing"),
                    crate::builtin::rate_limiting::config::conditional("policy"),
                ]),
                false => Ok(()),
            }
        }
        Some("cluster") if database => Ok(()),
        Some(_) => Err(vec![FieldError::new(
            "policy",
            "policy 'cluster' needs a database; this node runs without one (use 'local' or 'redis')",
        )]),
    }
}
