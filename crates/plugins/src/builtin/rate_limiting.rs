//! `rate-limiting` (priority 910): fixed, calendar-aligned (UTC) windows per second/minute/hour/day/month/year.
//!
//! Counting is exact across worker threads: each period's counter is incremented atomically and the request
//! passes only if every incremented count is within its limit; a refused request gives its increments back,
//! so refusals never use up quota. Counters live in [`crate::state::PluginState`], keyed by the plugin id, so
//! a reload that keeps the plugin keeps its counts. Policy `local` only: `cluster` and `redis` are refused at
//! config load until the distributed issue lands.

mod window;

use crate::ctx::RequestCtx;
use crate::plugin::{Flow, Plugin};
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
        Some(p) => errors.push(FieldError::new(
            "policy",
            format!("policy '{p}' is not supported by this build yet; use 'local'"),
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
    Ok(Arc::new(RateLimiting {
        plugin_id: entity.id,
        config,
        limits,
        header,
        status,
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
    plugin_id: uuid::Uuid,
    config: Config,
    limits: Vec<Limit>,
    header: Option<HeaderName>,
    status: StatusCode,
    state: Arc<PluginState>,
}

impl RateLimiting {
    /// Hashes Kong's identifier for this request (with its fallbacks to the client IP).
    fn identifier(&self, ctx: &RequestCtx<'_>, hasher: &mut impl Hasher) {
        match self.config.limit_by.as_str() {
            "consumer" => {
                if let Some(c) = ctx.consumer {
                    return c.id.hash(hasher);
                }
                if let Some(cred) = ctx.credential {
                    return cred.id.hash(hasher);
                }
            }
            "credential" => {
                if let Some(cred) = ctx.credential {
                    return cred.id.hash(hasher);
                }
            }
            "service" => {
                if let Some(s) = ctx.service {
                    return s.id.hash(hasher);
                }
            }
            "header" => {
                if let Some(v) = self
                    .header
                    .as_ref()
                    .and_then(|h| ctx.request.headers.get(h))
                {
                    return v.as_bytes().hash(hasher);
                }
            }
            "path" if self.config.path.as_deref() == Some(ctx.request.uri.path()) => {
                return ctx.request.uri.path().hash(hasher);
            }
            _ => {}
        }
        ctx.client_ip.hash(hasher);
    }
}

fn set(headers: &mut http::HeaderMap, name: HeaderName, value: u64) {
    headers.insert(name, HeaderValue::from(value));
}

impl Plugin for RateLimiting {
    fn name(&self) -> &'static str {
        "rate-limiting"
    }

    fn access(&self, ctx: &mut RequestCtx<'_>) -> Flow {
        let now = ctx
            .started_wall
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let mut base = std::hash::DefaultHasher::new();
        self.plugin_id.hash(&mut base);
        self.identifier(ctx, &mut base);
        // (key, window start) of each period counted, to undo them when one is exceeded (at most one per
        // period: on the stack).
        let mut counted = [(0u64, 0u64); PERIODS.len()];
        let mut exceeded = false;
        // (remaining, reset seconds, the period's limit) of the most restrictive period, for RateLimit-*.
        let mut tightest: Option<(u64, u64, &Limit)> = None;
        for (i, l) in self.limits.iter().enumerate() {
            let (start, end) = window::bounds(l.period, now);
            let mut h = base.clone();
            l.period.hash(&mut h);
            let key = h.finish();
            let count = self.state.increment(key, start, end - start, now);
            counted[i] = (key, start);
            exceeded |= count > l.limit;
            let remaining = l.limit.saturating_sub(count);
            if !self.config.hide_client_headers {
                let h = &mut ctx.response_headers;
                h.insert(l.limit_h.clone(), l.limit_value.clone());
                set(h, l.remaining_h.clone(), remaining);
            }
            let reset = end.saturating_sub(now).max(1);
            if tightest.is_none_or(|(r, _, _)| remaining < r) {
                tightest = Some((remaining, reset, l));
            }
        }
        if exceeded {
            for (key, start) in &counted[..self.limits.len()] {
                self.state.decrement(*key, *start);
            }
        }
        // The schema requires at least one period, so `tightest` is always set.
        if let Some((remaining, reset, l)) = tightest.filter(|_| !self.config.hide_client_headers) {
            let h = &mut ctx.response_headers;
            h.insert(RATELIMIT_LIMIT, l.limit_value.clone());
            set(h, RATELIMIT_REMAINING, remaining);
            set(h, RATELIMIT_RESET, reset);
        }
        let reset = tightest.map_or(1, |(_, reset, _)| reset);
        if exceeded {
            let mut resp = PluginResponse::message(self.status, &self.config.error_message);
            resp.headers
                .insert(http::header::RETRY_AFTER, HeaderValue::from(reset));
            return Flow::Respond(resp);
        }
        Flow::Continue
    }
}
