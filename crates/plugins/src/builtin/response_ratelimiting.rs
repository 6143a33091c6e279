//! `response-ratelimiting` (priority 900): limits that the upstream spends. The upstream reports what a
//! response used in a header (`X-Kong-Limit: videos=2, images=1`); the gateway counts it per named limit and
//! period, and refuses once a limit is used up.
//!
//! Kong's phases, each a registered handler:
//! - `access` reads the usage of every named limit and period, sends the upstream
//!   `X-RateLimit-Remaining-<name>` (the smallest over the name's periods), and with
//!   `block_on_first_violation` refuses a request whose limit is used up (429) before the upstream is asked;
//! - `header_filter` reads the upstream's usage header (then removes it), sends the client
//!   `X-RateLimit-Limit-<name>-<period>` and `X-RateLimit-Remaining-<name>-<period>`, and answers 429 with no
//!   body when the response spends a limit that was already used up (`body_filter` drops the upstream's
//!   body then);
//! - `log` adds what the response spent to the counters.
//!
//! What `access` read reaches the later phases in the request's [`RequestCtx::plugin_data`] (Kong's
//! `kong.ctx.plugin`). `policy: local` only: this node's counters in [`PluginState`], keyed by the plugin id,
//! so a reload that keeps the plugin keeps its counts.

mod config;

use crate::builtin::rate_limiting::window::{self, Period, PERIODS};
use crate::ctx::RequestCtx;
use crate::plugin::{Flow, Plugin, Registered};
use crate::registry::{typed_config, BuildCtx, Builtin};
use crate::response::PluginResponse;
use crate::state::PluginState;
use bytes::Bytes;
use config::{schema, Config};
use http::{HeaderName, HeaderValue, StatusCode};
use std::hash::{Hash, Hasher};
use std::sync::Arc;

pub fn builtin() -> Builtin {
    Builtin::new("response-ratelimiting", 900, schema(), build)
}

fn build(ctx: &BuildCtx<'_>, entity: &sluice_model::Plugin) -> Result<Arc<dyn Plugin>, String> {
    let config: Config = typed_config(entity)?;
    let header = |s: String| HeaderName::from_bytes(s.to_ascii_lowercase().as_bytes());
    let mut limits = Vec::new();
    for (name, periods) in &config.limits {
        let windows = PERIODS
            .iter()
            .filter_map(|p| Some((*p, periods.get(p.name()).copied().flatten()?)))
            .map(|(period, limit)| {
                Ok(Window {
                    period,
                    limit: limit as i64,
                    limit_h: header(format!("x-ratelimit-limit-{name}-{}", period.name()))?,
                    remaining_h: header(format!("x-ratelimit-remaining-{name}-{}", period.name()))?,
                })
            })
            .collect::<Result<Vec<_>, http::header::InvalidHeaderName>>()
            .map_err(|_| format!("limit name '{name}' cannot be part of a header name"))?;
        limits.push(Limit {
            name: name.clone(),
            upstream_h: header(format!("x-ratelimit-remaining-{name}"))
                .map_err(|_| format!("limit name '{name}' cannot be part of a header name"))?,
            windows,
        });
    }
    Ok(register(ResponseRateLimiting {
        plugin_id: entity.id,
        usage_header: header(config.header_name.clone()).map_err(|e| e.to_string())?,
        limit_by: match config.limit_by.as_str() {
            "consumer" => LimitBy::Consumer,
            "credential" => LimitBy::Credential,
            _ => LimitBy::Ip,
        },
        block_on_first_violation: config.block_on_first_violation,
        hide_client_headers: config.hide_client_headers,
        limits,
        state: ctx.state.clone(),
    }))
}

struct ResponseRateLimiting {
    plugin_id: uuid::Uuid,
    usage_header: HeaderName,
    limit_by: LimitBy,
    block_on_first_violation: bool,
    hide_client_headers: bool,
    /// By name, sorted.
    limits: Vec<Limit>,
    state: Arc<PluginState>,
}

/// Kong's `limit_by` for this plugin, decided at build time; each falls back to the client IP.
#[derive(Clone, Copy)]
enum LimitBy {
    Consumer,
    Credential,
    Ip,
}

/// One named limit, with its header names made once.
struct Limit {
    name: String,
    /// `X-RateLimit-Remaining-<name>`, to the upstream.
    upstream_h: HeaderName,
    windows: Vec<Window>,
}

/// One period of a named limit.
struct Window {
    period: Period,
    limit: i64,
    limit_h: HeaderName,
    remaining_h: HeaderName,
}

/// What `access` read, for `header_filter` and `log` of the same request: the counters' base key, when,
/// and each window's remaining count (in the order of `limits`, then `windows`).
#[derive(Clone)]
struct Usage {
    base: std::hash::DefaultHasher,
    now: u64,
    remaining: Vec<i64>,
}

/// What the response spent, per limit (in the order of `limits`); `stopped` when it was refused.
#[derive(Clone)]
struct Spent {
    increments: Vec<i64>,
    stopped: bool,
}

impl ResponseRateLimiting {
    fn key(base: &std::hash::DefaultHasher, limit: &str, period: Period) -> u64 {
        let mut h = base.clone();
        limit.hash(&mut h);
        period.hash(&mut h);
        h.finish()
    }

    fn access(&self, ctx: &mut RequestCtx<'_>) -> Flow {
        let now = ctx
            .started_wall
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let mut base = std::hash::DefaultHasher::new();
        self.plugin_id.hash(&mut base);
        match self.limit_by {
            LimitBy::Consumer => ctx.consumer.map(|c| c.id).or(ctx.credential.map(|c| c.id)),
            LimitBy::Credential => ctx.credential.map(|c| c.id),
            LimitBy::Ip => None,
        }
        .map_or_else(|| ctx.client_ip.to_string(), |id| id.to_string())
        .hash(&mut base);
        let mut remaining = Vec::new();
        for limit in &self.limits {
            let mut least = i64::MAX;
            for w in &limit.windows {
                let (start, _) = window::bounds(w.period, now);
                let used = self
                    .state
                    .get(Self::key(&base, &limit.name, w.period), start);
                let left = w.limit - used as i64;
                if self.block_on_first_violation && left <= 0 {
                    return Flow::Respond(PluginResponse::message(
                        StatusCode::TOO_MANY_REQUESTS,
                        &format!("API rate limit exceeded for '{}'", limit.name),
                    ));
                }
                least = least.min(left);
                remaining.push(left);
            }
            ctx.request
                .headers
                .insert(limit.upstream_h.clone(), HeaderValue::from(least));
        }
        ctx.plugin_data.insert(Usage {
            base,
            now,
            remaining,
        });
        Flow::Continue
    }

    fn header_filter(&self, ctx: &mut RequestCtx<'_>, response: &mut http::response::Parts) {
        let increments = self.spent(&response.headers);
        response.headers.remove(&self.usage_header);
        let Some(usage) = ctx.plugin_data.get::<Usage>() else {
            return;
        };
        let mut stopped = false;
        let mut left = usage.remaining.iter();
        for (limit, spent) in self.limits.iter().zip(&increments) {
            for w in &limit.windows {
                let remaining = *left.next().unwrap_or(&0);
                if !self.hide_client_headers {
                    let h = &mut response.headers;
                    h.insert(w.limit_h.clone(), HeaderValue::from(w.limit));
                    h.insert(
                        w.remaining_h.clone(),
                        HeaderValue::from((remaining - spent).max(0)),
                    );
                }
                stopped |= *spent > 0 && remaining <= 0;
            }
        }
        if stopped {
            response.status = StatusCode::TOO_MANY_REQUESTS;
            response.headers.remove(http::header::CONTENT_LENGTH);
        }
        ctx.plugin_data.insert(Spent {
            increments,
            stopped,
        });
    }

    /// A refused response goes without the upstream's body (Kong exits with no body).
    fn body_filter(&self, ctx: &mut RequestCtx<'_>, chunk: &mut Bytes, _eof: bool) {
        if ctx.plugin_data.get::<Spent>().is_some_and(|s| s.stopped) {
            *chunk = Bytes::new();
        }
    }

    fn log(&self, ctx: &RequestCtx<'_>, _: &crate::ctx::LogRecord) {
        let (Some(usage), Some(spent)) = (
            ctx.plugin_data.get::<Usage>(),
            ctx.plugin_data.get::<Spent>(),
        ) else {
            return;
        };
        if spent.stopped {
            return;
        }
        for (limit, by) in self.limits.iter().zip(&spent.increments) {
            if *by <= 0 {
                continue;
            }
            for w in &limit.windows {
                let (start, end) = window::bounds(w.period, usage.now);
                let key = Self::key(&usage.base, &limit.name, w.period);
                self.state
                    .add(key, start, end - start, usage.now, *by as u64);
            }
        }
    }

    /// What the upstream's usage header says each limit spent (0 for a limit it does not name). Kong's
    /// grammar: comma-separated `name=n` parts (a part with more than one `=` is ignored), names and values
    /// trimmed, the value a base-10 integer; several header lines count as parts too.
    fn spent(&self, headers: &http::HeaderMap) -> Vec<i64> {
        let mut spent = vec![0; self.limits.len()];
        let parts = headers
            .get_all(&self.usage_header)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','));
        for part in parts {
            let mut kv = part.split('=');
            let (Some(name), Some(value), None) = (kv.next(), kv.next(), kv.next()) else {
                continue;
            };
            let Ok(n) = value.trim().parse::<i64>() else {
                continue;
            };
            if let Ok(i) = self
                .limits
                .binary_search_by(|l| l.name.as_str().cmp(name.trim()))
            {
                spent[i] = n;
            }
        }
        spent
    }
}

/// This plugin's phases: each handler is registered here, next to where it is implemented.
fn register(plugin: ResponseRateLimiting) -> Arc<dyn Plugin> {
    Registered::new("response-ratelimiting", plugin)
        .access(ResponseRateLimiting::access)
        .header_filter(ResponseRateLimiting::header_filter)
        .body_filter(ResponseRateLimiting::body_filter)
        .log(ResponseRateLimiting::log)
        .build()
}

#[cfg(test)]
mod tests;
