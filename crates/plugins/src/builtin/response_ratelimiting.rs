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
//! `kong.ctx.plugin`). Policies:
//! - `local`: this node's counters in [`PluginState`], keyed by the plugin id, so a reload that keeps the
//!   plugin keeps its counts;
//! - `redis`: Kong's keys (`response-ratelimit:<route>:<service>:<identifier>:<window start ms>:<name>:<period>`,
//!   with the plugin instance's route and service), read in one `MGET` in `access` and added to with one
//!   pipeline from `log`, off the request; a mixed Kong/Sluice fleet shares them. As in Kong, reading and
//!   adding are separate steps, so concurrent responses on several nodes can overspend a limit by what they
//!   spend at once. When Redis fails, `fault_tolerant` lets the request through uncounted (logged at most
//!   every 10 s) or answers 500;
//! - `cluster` (DB mode only): Kong's `response_ratelimiting_metrics` table (period `<name>_<period>`), read
//!   and added to in the same two steps through the node's [`ClusterCounters`], which rate-limiting's
//!   cluster policy uses too; failures as with Redis.

mod config;
mod rules;

use crate::builtin::rate_limiting::redis;
use crate::builtin::rate_limiting::window::{self, Period, PERIODS};
use crate::builtin::rate_limiting::{failure_logged, PluginScope};
use crate::counters::{self, ClusterCounters, Scope};
use crate::ctx::RequestCtx;
use crate::plugin::{Flow, Plugin, Registered};
use crate::registry::{typed_config, BuildCtx, Builtin};
use crate::response::PluginResponse;
use crate::state::PluginState;
use bytes::Bytes;
use config::{schema, Config};
use http::{HeaderName, HeaderValue, StatusCode};
use rules::{Limit, Rules, Spent, Usage, Window};
use std::hash::{Hash, Hasher};
use std::sync::Arc;

/// `database`: the node has one (`policy: cluster` is accepted).
pub fn builtin(database: bool) -> Builtin {
    Builtin::new("response-ratelimiting", 900, schema(database), build)
}

fn build(ctx: &BuildCtx<'_>, entity: &sluice_model::Plugin) -> Result<Arc<dyn Plugin>, String> {
    let config: Config = typed_config(entity)?;
    let header = |s: String| HeaderName::from_bytes(s.to_ascii_lowercase().as_bytes());
    let mut limits = Vec::new();
    for (name, periods) in &config.limits {
        let bad_name = |_| format!("limit name '{name}' cannot be part of a header name");
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
            .map_err(bad_name)?;
        limits.push(Limit {
            name: name.clone(),
            upstream_h: header(format!("x-ratelimit-remaining-{name}")).map_err(bad_name)?,
            windows,
        });
    }
    let store = match config.policy.as_str() {
        "redis" => Some(Store::Redis(Arc::new(redis::Target::new(
            &config.redis.config(),
        )?))),
        "cluster" => Some(Store::Cluster(ctx.state.cluster_counters().ok_or(
            "policy 'cluster' needs a database; this node runs without one (use 'local' or 'redis')",
        )?)),
        _ => None,
    };
    Ok(register(ResponseRateLimiting {
        plugin_id: entity.id,
        scope: PluginScope::of(entity),
        limit_by: match config.limit_by.as_str() {
            "consumer" => LimitBy::Consumer,
            "credential" => LimitBy::Credential,
            _ => LimitBy::Ip,
        },
        store,
        fault_tolerant: config.fault_tolerant,
        rules: Arc::new(Rules {
            usage_header: header(config.header_name.clone()).map_err(|e| e.to_string())?,
            block_on_first_violation: config.block_on_first_violation,
            hide_client_headers: config.hide_client_headers,
            limits,
        }),
        state: ctx.state.clone(),
    }))
}

struct ResponseRateLimiting {
    plugin_id: uuid::Uuid,
    /// The instance's route and service, in Kong's Redis keys.
    scope: PluginScope,
    limit_by: LimitBy,
    /// Set for `policy: redis` and `policy: cluster`.
    store: Option<Store>,
    fault_tolerant: bool,
    /// Shared with the Redis path's deferred futures, which outlive the call.
    rules: Arc<Rules>,
    state: Arc<PluginState>,
}

/// Where `policy: redis` and `policy: cluster` count: counters every node shares.
#[derive(Clone)]
enum Store {
    Redis(Arc<redis::Target>),
    Cluster(Arc<dyn ClusterCounters>),
}

/// Kong's `limit_by` for this plugin, decided at build time; each falls back to the client IP.
#[derive(Clone, Copy)]
enum LimitBy {
    Consumer,
    Credential,
    Ip,
}

impl ResponseRateLimiting {
    /// The local counter of one window.
    fn local_key(&self, identifier: &str, limit: &str, period: Period) -> u64 {
        let mut h = std::hash::DefaultHasher::new();
        (self.plugin_id, identifier, limit, period).hash(&mut h);
        h.finish()
    }

    /// Kong's Redis key of one window.
    fn redis_key(&self, identifier: &str, limit: &str, period: Period, now: u64) -> String {
        let (start, _) = window::bounds(period, now);
        format!(
            "response-ratelimit:{}:{}:{identifier}:{}:{limit}:{}",
            self.scope.route,
            self.scope.service,
            start * 1000,
            period.name()
        )
    }

    /// Whose counters, in the database: the identifier and the instance's route and service.
    fn cluster_scope(&self, identifier: &str) -> Scope {
        Scope {
            identifier: identifier.to_string(),
            service: self.scope.service,
            route: self.scope.route,
        }
    }

    /// A window's row in the database (Kong's period column is `<name>_<period>`).
    fn cluster_window(name: &str, w: &Window, now: u64) -> counters::Window {
        let (start, end) = window::bounds(w.period, now);
        counters::Window {
            period: format!("{name}_{}", w.period.name()).into(),
            start,
            limit: w.limit as u64,
            ttl_secs: window::kept_for(end - start),
        }
    }

    /// Each window's count in the shared store, in the order of [`Self::windows`].
    fn read(&self, store: Store, identifier: &str, now: u64) -> counters::CountsFuture {
        match store {
            Store::Redis(target) => {
                let keys: Vec<String> = self
                    .windows()
                    .map(|(name, w)| self.redis_key(identifier, name, w.period, now))
                    .collect();
                Box::pin(async move { redis::counts(&target, &keys).await })
            }
            Store::Cluster(counters) => {
                let windows = self.windows();
                let windows = windows.map(|(name, w)| Self::cluster_window(name, w, now));
                counters.spent(self.cluster_scope(identifier), windows.collect())
            }
        }
    }

    /// Every window of every limit, in order: (limit name, window).
    fn windows(&self) -> impl Iterator<Item = (&str, &Window)> {
        let limits = self.rules.limits.iter();
        limits.flat_map(|l| l.windows.iter().map(move |w| (l.name.as_str(), w)))
    }

    fn access(&self, ctx: &mut RequestCtx<'_>) -> Flow {
        let now = ctx
            .started_wall
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let identifier = match self.limit_by {
            LimitBy::Consumer => ctx.consumer.map(|c| c.id).or(ctx.credential.map(|c| c.id)),
            LimitBy::Credential => ctx.credential.map(|c| c.id),
            LimitBy::Ip => None,
        }
        .map_or_else(|| ctx.client_ip.to_string(), |id| id.to_string());
        let Some(store) = self.store.clone() else {
            let remaining = self
                .windows()
                .map(|(name, w)| {
                    let (start, _) = window::bounds(w.period, now);
                    let used = self
                        .state
                        .get(self.local_key(&identifier, name, w.period), start);
                    w.limit - used as i64
                })
                .collect();
            let usage = Usage {
                identifier,
                now,
                remaining,
            };
            return self.rules.settle(ctx, usage);
        };
        let read = self.read(store, &identifier, now);
        let limits: Vec<i64> = self.windows().map(|(_, w)| w.limit).collect();
        let (rules, fault_tolerant) = (self.rules.clone(), self.fault_tolerant);
        Flow::Defer(Box::pin(async move {
            match read.await {
                Ok(counts) => {
                    let remaining = limits
                        .iter()
                        .zip(counts)
                        .map(|(l, c)| l - c as i64)
                        .collect();
                    let usage = Usage {
                        identifier,
                        now,
                        remaining,
                    };
                    Flow::Then(Box::new(move |ctx| rules.settle(ctx, usage)))
                }
                Err(error) => {
                    failure_logged(&error);
                    match fault_tolerant {
                        true => Flow::Continue,
                        false => Flow::Respond(PluginResponse::message(
                            StatusCode::INTERNAL_SERVER_ERROR,
                            "An unexpected error occurred",
                        )),
                    }
                }
            }
        }))
    }

    fn header_filter(&self, ctx: &mut RequestCtx<'_>, response: &mut http::response::Parts) {
        let rules = &*self.rules;
        let increments = rules.spent(&response.headers);
        response.headers.remove(&rules.usage_header);
        let Some(usage) = ctx.plugin_data.get::<Usage>() else {
            return;
        };
        let mut stopped = false;
        let mut left = usage.remaining.iter();
        for (limit, spent) in rules.limits.iter().zip(&increments) {
            for w in &limit.windows {
                let remaining = *left.next().unwrap_or(&0);
                if !rules.hide_client_headers {
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

    /// Adds what the response spent to every window of each limit it spent.
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
        for (limit, by) in self.rules.limits.iter().zip(&spent.increments) {
            let Ok(by @ 1..) = u64::try_from(*by) else {
                continue;
            };
            match &self.store {
                None => {
                    for w in &limit.windows {
                        let (start, end) = window::bounds(w.period, usage.now);
                        let key = self.local_key(&usage.identifier, &limit.name, w.period);
                        self.state.add(key, start, end - start, usage.now, by);
                    }
                }
                Some(store) => self.spend(store, usage, limit, by),
            }
        }
    }

    /// Adds `by` to every window of `limit` in the shared store, off the request (after the response).
    fn spend(&self, store: &Store, usage: &Usage, limit: &Limit, by: u64) {
        let added: counters::AddFuture = match store {
            Store::Redis(target) => {
                let windows: Vec<redis::Window> = limit
                    .windows
                    .iter()
                    .map(|w| {
                        let (start, end) = window::bounds(w.period, usage.now);
                        redis::Window {
                            key: self.redis_key(
                                &usage.identifier,
                                &limit.name,
                                w.period,
                                usage.now,
                            ),
                            ttl_secs: window::kept_for(end - start),
                        }
                    })
                    .collect();
                let target = target.clone();
                Box::pin(async move { redis::add(&target, &windows, by).await })
            }
            Store::Cluster(counters) => {
                let windows = limit.windows.iter();
                let windows = windows.map(|w| Self::cluster_window(&limit.name, w, usage.now));
                counters.spend(self.cluster_scope(&usage.identifier), windows.collect(), by)
            }
        };
        tokio::spawn(async move {
            if let Err(error) = added.await {
                failure_logged(&error);
            }
        });
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
