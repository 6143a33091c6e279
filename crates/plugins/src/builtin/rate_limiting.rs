//! `rate-limiting` (priority 910): fixed, calendar-aligned (UTC) windows per second/minute/hour/day/month/year.
//!
//! `policy: local`: counting is exact across worker threads: each period's counter is incremented atomically
//! and the request passes only if every incremented count is within its limit; a refused request gives its
//! increments back, so refusals never use up quota. Counters live in [`crate::state::PluginState`], keyed by
//! the plugin id, so a reload that keeps the plugin keeps its counts.
//!
//! `policy: redis`: exact across nodes ([`redis`]: one atomic check-and-count per request). When Redis fails
//! or times out, `fault_tolerant` lets the request through (logged at most every 10 s) or answers Kong's 500.
//! `sync_rate` other than -1 (count locally, sync in batches) and `policy: cluster` are refused at load for
//! now: `cluster` needs DB mode, as in Kong.

mod redis;
mod window;

use crate::ctx::RequestCtx;
use crate::plugin::{Flow, Plugin, Registered};
use crate::registry::{typed_config, BuildCtx, Builtin};
use crate::response::PluginResponse;
use crate::state::PluginState;
use http::{HeaderName, HeaderValue, StatusCode};
use serde::Deserialize;
use serde_json::{Map, Value};
use sluice_model::schema::{Field, FieldError, Schema};
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use window::{Period, PERIODS};

#[derive(Debug, Deserialize)]
struct Config {
    second: Option<f64>,
    minute: Option<f64>,
    hour: Option<f64>,
    day: Option<f64>,
    month: Option<f64>,
    year: Option<f64>,
    /// `consumer` (default), `credential`, `ip`, `service`, `header`, `path`; each falls back to `ip`.
    limit_by: String,
    header_name: Option<String>,
    path: Option<String>,
    /// Don't send the `RateLimit-*` / `X-RateLimit-*` headers.
    hide_client_headers: bool,
    error_code: u16,
    error_message: String,
    policy: String,
    fault_tolerant: bool,
    #[serde(default)]
    redis: Option<redis::RedisConfig>,
    /// Kong's deprecated flat `redis_*` fields, still accepted and exported by Kong 3.x: folded into `redis`.
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

impl Config {
    /// The `redis` record, each flat `redis_*` field that is set overriding its record field (Kong's
    /// shorthands write through to the record; the record's own fields carry schema defaults).
    fn redis(&self) -> redis::RedisConfig {
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

fn schema() -> Schema {
    let limit = || Field::number().gt(0.0);
    let redis = Schema::new(vec![
        ("host", Field::string()),
        ("port", Field::integer().default(6379).between(0.0, 65535.0)),
        ("timeout", Field::integer().default(2000)),
        ("connect_timeout", Field::integer().default(2000)),
        ("send_timeout", Field::integer().default(2000)),
        ("read_timeout", Field::integer().default(2000)),
        ("username", Field::string()),
        ("password", Field::string()),
        ("database", Field::integer().default(0)),
        ("ssl", Field::boolean().default(false)),
        ("ssl_verify", Field::boolean().default(false)),
        ("server_name", Field::string()),
    ]);
    Schema::new(vec![
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
                "consumer-group",
            ]),
        ),
        ("header_name", Field::string()),
        ("path", Field::string()),
        (
            "policy",
            Field::string()
                .default("local")
                .one_of(&["local", "cluster", "redis"]),
        ),
        ("fault_tolerant", Field::boolean().default(true)),
        ("redis", Field::record(redis)),
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
        ("redis_host", Field::string()),
        ("redis_port", Field::integer().between(0.0, 65535.0)),
        ("redis_username", Field::string()),
        ("redis_password", Field::string()),
        ("redis_database", Field::integer()),
        ("redis_timeout", Field::integer()),
        ("redis_ssl", Field::boolean()),
        ("redis_ssl_verify", Field::boolean()),
        ("redis_server_name", Field::string()),
    ])
    .with_check(check)
}

/// Kong's cross-field rules, plus this build's policy limit.
fn check(m: &Map<String, Value>) -> Result<(), Vec<FieldError>> {
    let set: Vec<(&str, f64)> = PERIODS
        .iter()
        .filter_map(|p| m[p.name()].as_f64().map(|v| (p.name(), v)))
        .collect();
    if set.is_empty() {
        return Err(vec![FieldError::entity(
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
    match m["policy"].as_str() {
        Some("local") | None => {}
        Some("redis") => {
            let host = m["redis"].get("host").filter(|h| !h.is_null());
            if host.is_none() && m["redis_host"].is_null() {
                errors.push(FieldError::new("redis.host", "required field missing"));
            }
            if m["sync_rate"].as_f64().is_some_and(|r| r != -1.0) {
                errors.push(FieldError::new(
                    "sync_rate",
                    "only -1 (count on Redis for every request) is supported by this build",
                ));
            }
        }
        Some(_) => errors.push(FieldError::new(
            "policy",
            "policy 'cluster' needs a database; this node runs without one (use 'local' or 'redis')",
        )),
    }
    match m["limit_by"].as_str() {
        Some("header") if m["header_name"].is_null() => {
            errors.push(FieldError::new("header_name", "required field missing"))
        }
        Some("path") if m["path"].is_null() => {
            errors.push(FieldError::new("path", "required field missing"))
        }
        Some("consumer-group") => errors.push(FieldError::new(
            "limit_by",
            "consumer groups are not supported by this build",
        )),
        _ => {}
    }
    errors.is_empty().then_some(()).ok_or(errors)
}

pub fn builtin() -> Builtin {
    Builtin::new("rate-limiting", 910, schema(), build)
}

fn build(ctx: &BuildCtx<'_>, entity: &sluice_model::Plugin) -> Result<Arc<dyn Plugin>, String> {
    let config: Config = typed_config(entity)?;
    let limits: Vec<Limit> = PERIODS
        .iter()
        .filter_map(|p| {
            let limit = match p {
                Period::Second => config.second,
                Period::Minute => config.minute,
                Period::Hour => config.hour,
                Period::Day => config.day,
                Period::Month => config.month,
                Period::Year => config.year,
            }?;
            let title = p.title();
            let limit_h = HeaderName::from_bytes(
                format!("x-ratelimit-limit-{}", title.to_lowercase()).as_bytes(),
            )
            .ok()?;
            let remaining_h = HeaderName::from_bytes(
                format!("x-ratelimit-remaining-{}", title.to_lowercase()).as_bytes(),
            )
            .ok()?;
            Some(Limit {
                period: *p,
                limit: limit as u64,
                limit_value: HeaderValue::from(limit as u64),
                limit_h,
                remaining_h,
            })
        })
        .collect();
    let header = config
        .header_name
        .as_deref()
        .and_then(|h| HeaderName::from_bytes(h.to_ascii_lowercase().as_bytes()).ok());
    let status = StatusCode::from_u16(config.error_code).map_err(|e| e.to_string())?;
    let redis = match config.policy.as_str() {
        "redis" => Some(Arc::new(redis::Target::new(&config.redis())?)),
        _ => None,
    };
    Ok(register(RateLimiting {
        redis,
        plugin_id: entity.id,
        rules: Arc::new(Rules {
            limit_by: LimitBy::parse(&config.limit_by),
            config,
            limits,
            status,
        }),
        header,
        state: ctx.state.clone(),
    }))
}

/// One configured period, with its response headers ready (names and the limit's value are the same for
/// every request).
struct Limit {
    period: Period,
    limit: u64,
    limit_value: HeaderValue,
    limit_h: HeaderName,
    remaining_h: HeaderName,
}

const RATELIMIT_LIMIT: HeaderName = HeaderName::from_static("ratelimit-limit");
const RATELIMIT_REMAINING: HeaderName = HeaderName::from_static("ratelimit-remaining");
const RATELIMIT_RESET: HeaderName = HeaderName::from_static("ratelimit-reset");

struct RateLimiting {
    /// Set for `policy: redis`.
    redis: Option<Arc<redis::Target>>,
    plugin_id: uuid::Uuid,
    /// Shared with the Redis path's deferred futures, which outlive the call.
    rules: Arc<Rules>,
    header: Option<HeaderName>,
    state: Arc<PluginState>,
}

/// Kong's `limit_by`, decided once per config (each falls back to the client IP when its value is absent).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LimitBy {
    Consumer,
    Credential,
    Ip,
    Service,
    Header,
    Path,
}

impl LimitBy {
    fn parse(s: &str) -> LimitBy {
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

/// The configured limits and the answers they give.
struct Rules {
    limit_by: LimitBy,
    config: Config,
    limits: Vec<Limit>,
    status: StatusCode,
}

impl RateLimiting {
    /// Hashes Kong's identifier for this request (with its fallbacks to the client IP).
    fn identifier(&self, ctx: &RequestCtx<'_>, hasher: &mut impl Hasher) {
        match self.rules.limit_by {
            LimitBy::Consumer => {
                if let Some(c) = ctx.consumer {
                    return c.id.hash(hasher);
                }
                if let Some(cred) = ctx.credential {
                    return cred.id.hash(hasher);
                }
            }
            LimitBy::Credential => {
                if let Some(cred) = ctx.credential {
                    return cred.id.hash(hasher);
                }
            }
            LimitBy::Service => {
                if let Some(s) = ctx.service {
                    return s.id.hash(hasher);
                }
            }
            LimitBy::Header => {
                if let Some(v) = self
                    .header
                    .as_ref()
                    .and_then(|h| ctx.request.headers.get(h))
                {
                    return v.as_bytes().hash(hasher);
                }
            }
            LimitBy::Path if self.rules.config.path.as_deref() == Some(ctx.request.uri.path()) => {
                return ctx.request.uri.path().hash(hasher);
            }
            LimitBy::Path | LimitBy::Ip => {}
        }
        ctx.client_ip.hash(hasher);
    }
}

fn set(headers: &mut http::HeaderMap, name: HeaderName, value: u64) {
    headers.insert(name, HeaderValue::from(value));
}

/// The all-zero UUID Kong puts in a key for a missing route or service.
const NO_ID: uuid::Uuid = uuid::Uuid::nil();

impl RateLimiting {
    /// Kong's identifier for this request as text (the Redis key's part), with its fallbacks to the
    /// client IP.
    fn identifier_text(&self, ctx: &RequestCtx<'_>) -> String {
        let found = match self.rules.limit_by {
            LimitBy::Consumer => ctx
                .consumer
                .map(|c| c.id.to_string())
                .or_else(|| ctx.credential.map(|c| c.id.to_string())),
            LimitBy::Credential => ctx.credential.map(|c| c.id.to_string()),
            LimitBy::Service => ctx.service.map(|s| s.id.to_string()),
            LimitBy::Header => self
                .header
                .as_ref()
                .and_then(|h| ctx.request.headers.get(h))
                .and_then(|v| v.to_str().ok())
                .map(str::to_string),
            LimitBy::Path if self.rules.config.path.as_deref() == Some(ctx.request.uri.path()) => {
                Some(ctx.request.uri.path().to_string())
            }
            LimitBy::Path | LimitBy::Ip => None,
        };
        found.unwrap_or_else(|| ctx.client_ip.to_string())
    }

    /// `policy: local`: this node's counters.
    fn count_locally(&self, ctx: &mut RequestCtx<'_>, now: u64) -> Flow {
        let mut base = std::hash::DefaultHasher::new();
        self.plugin_id.hash(&mut base);
        self.identifier(ctx, &mut base);
        // (key, window start) and count of each period, to undo them when one is exceeded (at most one per
        // period: on the stack).
        let mut counted = [(0u64, 0u64); PERIODS.len()];
        let mut counts = [0u64; PERIODS.len()];
        let mut exceeded = false;
        for (i, l) in self.rules.limits.iter().enumerate() {
            let (start, end) = window::bounds(l.period, now);
            let mut h = base.clone();
            l.period.hash(&mut h);
            let key = h.finish();
            counts[i] = self.state.increment(key, start, end - start, now);
            counted[i] = (key, start);
            exceeded |= counts[i] > l.limit;
        }
        let n = self.rules.limits.len();
        if exceeded {
            for (key, start) in &counted[..n] {
                self.state.decrement(*key, *start);
            }
        }
        match self
            .rules
            .verdict(&counts[..n], exceeded, now, &mut ctx.response_headers)
        {
            Some(resp) => Flow::Respond(resp),
            None => Flow::Continue,
        }
    }

    /// `policy: redis`: one atomic check-and-count on Redis, off the worker's thread of control.
    fn count_on_redis(&self, target: Arc<redis::Target>, ctx: &RequestCtx<'_>, now: u64) -> Flow {
        let (route, service) = (
            ctx.route.map_or(NO_ID, |r| r.id),
            ctx.service.map_or(NO_ID, |s| s.id),
        );
        let identifier = self.identifier_text(ctx);
        let rules = self.rules.clone();
        let windows: Vec<redis::Window> = rules
            .limits
            .iter()
            .map(|l| {
                let (start, end) = window::bounds(l.period, now);
                redis::Window {
                    key: format!(
                        "ratelimit:{route}:{service}:{identifier}:{}:{}",
                        start * 1000,
                        l.period.name()
                    ),
                    limit: l.limit,
                    ttl_secs: (end - start).max(1),
                }
            })
            .collect();
        Flow::Defer(Box::pin(async move {
            match redis::check_and_count(&target, &windows).await {
                Ok(counted) => {
                    let mut headers = http::HeaderMap::new();
                    // A refused request's counts are the full windows; it is the one over the limit.
                    let counts: Vec<u64> = match counted.allowed {
                        true => counted.counts,
                        false => counted.counts.iter().map(|c| c + 1).collect(),
                    };
                    match rules.verdict(&counts, !counted.allowed, now, &mut headers) {
                        Some(mut resp) => {
                            resp.headers.extend(headers);
                            Flow::Respond(resp)
                        }
                        None => Flow::ContinueWith(headers),
                    }
                }
                Err(error) if rules.config.fault_tolerant => {
                    redis_failure_logged(&error);
                    Flow::Continue
                }
                Err(error) => {
                    redis_failure_logged(&error);
                    Flow::Respond(PluginResponse::message(
                        StatusCode::INTERNAL_SERVER_ERROR,
                        "An unexpected error occurred",
                    ))
                }
            }
        }))
    }
}

impl Rules {
    /// The response headers for the counts after this request, in `headers`, and the refusal when a
    /// window is over its limit. `counts[i]` belongs to `self.limits[i]`.
    fn verdict(
        &self,
        counts: &[u64],
        exceeded: bool,
        now: u64,
        headers: &mut http::HeaderMap,
    ) -> Option<PluginResponse> {
        // (remaining, reset seconds, the period's limit) of the most restrictive period, for RateLimit-*.
        let mut tightest: Option<(u64, u64, &Limit)> = None;
        for (l, count) in self.limits.iter().zip(counts) {
            let remaining = l.limit.saturating_sub(*count);
            if !self.config.hide_client_headers {
                headers.insert(l.limit_h.clone(), l.limit_value.clone());
                set(headers, l.remaining_h.clone(), remaining);
            }
            let (_, end) = window::bounds(l.period, now);
            let reset = end.saturating_sub(now).max(1);
            if tightest.is_none_or(|(r, _, _)| remaining < r) {
                tightest = Some((remaining, reset, l));
            }
        }
        // The schema requires at least one period, so `tightest` is always set.
        if let Some((remaining, reset, l)) = tightest.filter(|_| !self.config.hide_client_headers) {
            headers.insert(RATELIMIT_LIMIT, l.limit_value.clone());
            set(headers, RATELIMIT_REMAINING, remaining);
            set(headers, RATELIMIT_RESET, reset);
        }
        let reset = tightest.map_or(1, |(_, reset, _)| reset);
        exceeded.then(|| {
            let mut resp = PluginResponse::message(self.status, &self.config.error_message);
            resp.headers
                .insert(http::header::RETRY_AFTER, HeaderValue::from(reset));
            resp
        })
    }
}

/// Logs a Redis failure at most every 10 s per process, with how many were not logged in between.
fn redis_failure_logged(error: &str) {
    use std::sync::atomic::{AtomicU64, Ordering};
    static LAST: AtomicU64 = AtomicU64::new(0);
    static SKIPPED: AtomicU64 = AtomicU64::new(0);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let last = LAST.load(Ordering::Relaxed);
    if now >= last + 10
        && LAST
            .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
    {
        let skipped = SKIPPED.swap(0, Ordering::Relaxed);
        tracing::error!(error, skipped, "rate-limiting: failed to count on redis");
    } else {
        SKIPPED.fetch_add(1, Ordering::Relaxed);
    }
}

impl RateLimiting {
    fn access(&self, ctx: &mut RequestCtx<'_>) -> Flow {
        let now = ctx
            .started_wall
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        match &self.redis {
            None => self.count_locally(ctx, now),
            Some(target) => self.count_on_redis(target.clone(), ctx, now),
        }
    }
}

/// This plugin's phases: each handler is registered here, next to where it is implemented.
fn register(plugin: RateLimiting) -> Arc<dyn Plugin> {
    Registered::new("rate-limiting", plugin)
        .access(RateLimiting::access)
        .build()
}
