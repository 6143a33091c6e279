//! `rate-limiting` (priority 910): fixed, calendar-aligned (UTC) windows per second/minute/hour/day/month/year.
//!
//! `policy: local`: counting is exact across worker threads: each period's counter is incremented atomically
//! and the request passes only if every incremented count is within its limit; a refused request gives its
//! increments back, so refusals never use up quota. Counters live in [`crate::state::PluginState`], keyed by
//! the plugin id, so a reload that keeps the plugin keeps its counts.
//!
//! `policy: redis`: exact across nodes ([`redis`]: one atomic check-and-count per request). When Redis fails
//! or times out, `fault_tolerant` lets the request through (logged at most every 10 s) or answers Kong's 500.
//! With `sync_rate > 0` the node counts locally and syncs with Redis in the background ([`batch`]), within a
//! documented bound.
//!
//! `policy: cluster` (DB mode only, as in Kong): the same atomic check-and-count in the database's
//! `ratelimiting_metrics` table, through the node's [`ClusterCounters`].

mod batch;
pub(crate) mod config;
mod last_keyed;
pub(crate) mod redis;
pub(crate) mod window;

use crate::added_headers::AddedHeaders;
use crate::counters::{ClusterCounters, Counted, Scope, Window};
use crate::ctx::RequestCtx;
use crate::plugin::{Flow, Plugin, Registered};
use crate::registry::{typed_config, BuildCtx, Builtin};
use crate::response::PluginResponse;
use crate::state::PluginState;
use batch::{Batch, Known};
use config::{schema, Config, LimitBy};
use http::{HeaderName, HeaderValue, StatusCode};
use std::hash::{BuildHasher, Hash, Hasher};
use std::sync::Arc;
use window::{Period, PERIODS};

/// `database`: the node has one (`policy: cluster` is accepted).
pub fn builtin(database: bool) -> Builtin {
    Builtin::new("rate-limiting", 910, schema(database), build)
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
            let (limit_h, remaining_h) = header_names(*p);
            Some(Limit {
                period: *p,
                limit: limit as u64,
                limit_h: HeaderName::from_static(limit_h),
                remaining_h: HeaderName::from_static(remaining_h),
            })
        })
        .collect();
    let header = config
        .header_name
        .as_deref()
        .and_then(|h| HeaderName::from_bytes(h.to_ascii_lowercase().as_bytes()).ok());
    let status = StatusCode::from_u16(config.error_code).map_err(|e| e.to_string())?;
    let mut batch = None;
    let shared = match config.policy.as_str() {
        "redis" => {
            let target = Arc::new(redis::Target::new(&config.redis.config())?);
            if config.sync_rate > 0.0 {
                let every = std::time::Duration::from_secs_f64(config.sync_rate);
                batch = Some(Batch::start(target.clone(), every)?);
            }
            Some(Shared::Redis(target))
        }
        "cluster" => Some(Shared::Cluster(ctx.state.cluster_counters().ok_or(
            "policy 'cluster' needs a database; this node runs without one (use 'local' or 'redis')",
        )?)),
        _ => None,
    };
    Ok(register(RateLimiting {
        shared,
        batch,
        plugin_id: entity.id,
        scope: PluginScope::of(entity),
        key_prefix: {
            let scope = PluginScope::of(entity);
            format!("ratelimit:{}:{}:", scope.route, scope.service)
        },
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

/// One configured period, with its response headers' names ready. The limit goes into them as a number
/// (written as text with the head): no value shared by every worker's requests, whose reference count
/// each clone and drop would write.
struct Limit {
    period: Period,
    limit: u64,
    limit_h: HeaderName,
    remaining_h: HeaderName,
}

/// `X-RateLimit-Limit-<Period>` and `X-RateLimit-Remaining-<Period>`, lowercase: static names, which a
/// request clones without touching a reference count.
fn header_names(period: Period) -> (&'static str, &'static str) {
    match period {
        Period::Second => ("x-ratelimit-limit-second", "x-ratelimit-remaining-second"),
        Period::Minute => ("x-ratelimit-limit-minute", "x-ratelimit-remaining-minute"),
        Period::Hour => ("x-ratelimit-limit-hour", "x-ratelimit-remaining-hour"),
        Period::Day => ("x-ratelimit-limit-day", "x-ratelimit-remaining-day"),
        Period::Month => ("x-ratelimit-limit-month", "x-ratelimit-remaining-month"),
        Period::Year => ("x-ratelimit-limit-year", "x-ratelimit-remaining-year"),
    }
}

static RATELIMIT_LIMIT: HeaderName = HeaderName::from_static("ratelimit-limit");
static RATELIMIT_REMAINING: HeaderName = HeaderName::from_static("ratelimit-remaining");
static RATELIMIT_RESET: HeaderName = HeaderName::from_static("ratelimit-reset");

/// The most headers a response gets: two per period, and the three `RateLimit-*`.
const MOST_HEADERS: usize = 2 * PERIODS.len() + 3;

/// Where `policy: redis` and `policy: cluster` count: counters every node shares.
#[derive(Clone)]
enum Shared {
    Redis(Arc<redis::Target>),
    Cluster(Arc<dyn ClusterCounters>),
}

/// One request's check-and-count in the shared store, ready to be awaited off the worker's thread of
/// control.
enum Ask {
    Redis(Arc<redis::Target>, redis::Keyed),
    Cluster(Arc<dyn ClusterCounters>, Scope, Vec<Window>),
}

impl Ask {
    /// Checks and counts the request in every window, atomically.
    async fn check_and_count(self) -> Result<Counted, String> {
        match self {
            Ask::Redis(target, windows) => redis::check_and_count(&target, &windows).await,
            Ask::Cluster(counters, scope, windows) => {
                counters.check_and_count(scope, windows).await
            }
        }
    }
}

/// Kong's Redis keys of a request, one per configured period:
/// `ratelimit:<route>:<service>:<identifier>:<window start ms>:<period>`, written one after the other
/// into the worker's scratch buffer (`ends[i]` is where key `i` ends).
struct RedisKeys<'a> {
    text: &'a [u8],
    ends: [usize; PERIODS.len()],
}

impl RedisKeys<'_> {
    /// Key `i`.
    fn get(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.text[start..self.ends[i]]
    }

    /// `f` of each configured window's (key, limit, time to live in seconds), as [`redis::Keyed`] takes
    /// them.
    fn with_windows<T>(
        &self,
        rules: &Rules,
        now: u64,
        f: impl FnOnce(&[(&[u8], u64, u64)]) -> T,
    ) -> T {
        let mut windows = [(&b""[..], 0, 0); PERIODS.len()];
        for (i, (w, l)) in windows.iter_mut().zip(&rules.limits).enumerate() {
            let (start, end) = window::bounds(l.period, now);
            *w = (self.get(i), l.limit, window::kept_for(end - start));
        }
        f(&windows[..rules.limits.len()])
    }
}

struct RateLimiting {
    /// Set for `policy: redis` and `policy: cluster`.
    shared: Option<Shared>,
    /// Set for `policy: redis` with `sync_rate > 0`: this node's counts, synced in the background.
    batch: Option<Arc<Batch>>,
    plugin_id: uuid::Uuid,
    scope: PluginScope,
    /// `ratelimit:<route>:<service>:`, how each of its Redis keys starts (see [`RedisKeys`]).
    key_prefix: String,
    /// Shared with the Redis path's deferred futures, which outlive the call.
    rules: Arc<Rules>,
    header: Option<HeaderName>,
    state: Arc<PluginState>,
}
/// The configured limits and the answers they give.
struct Rules {
    limit_by: LimitBy,
    config: Config,
    limits: Vec<Limit>,
    status: StatusCode,
}

/// Kong's identifier of a request: what `limit_by` names, or the client IP when that is absent. The local
/// policy hashes it; the Redis policy writes it into Kong's key.
#[derive(Hash)]
enum Identifier<'a> {
    Id(uuid::Uuid),
    Text(&'a [u8]),
    Ip(std::net::IpAddr),
}

impl Identifier<'_> {
    /// As Kong writes it into its keys (an id hyphenated, lowercase).
    fn text(&self) -> String {
        let mut text = Vec::new();
        self.write_to(&mut text);
        // Valid UTF-8: `write_to` writes nothing else.
        String::from_utf8_lossy(&text).into_owned()
    }

    /// Appends [`Identifier::text`] to `out` (as UTF-8). An IPv4 address is written digit by digit:
    /// through `fmt` it cost more than the rest of a Redis key.
    fn write_to(&self, out: &mut Vec<u8>) {
        match self {
            Identifier::Id(id) => out.extend_from_slice(
                id.hyphenated()
                    .encode_lower(&mut uuid::Uuid::encode_buffer())
                    .as_bytes(),
            ),
            Identifier::Text(bytes) => {
                out.extend_from_slice(String::from_utf8_lossy(bytes).as_bytes());
            }
            Identifier::Ip(std::net::IpAddr::V4(ip)) => {
                let mut digits = itoa::Buffer::new();
                for (i, octet) in ip.octets().into_iter().enumerate() {
                    if i > 0 {
                        out.push(b'.');
                    }
                    out.extend_from_slice(digits.format(octet).as_bytes());
                }
            }
            Identifier::Ip(ip) => {
                use std::io::Write;
                let _ = write!(out, "{ip}");
            }
        }
    }
}

impl RateLimiting {
    /// Kong's identifier for this request (with its fallbacks to the client IP).
    fn identifier<'a>(&self, ctx: &'a RequestCtx<'_>) -> Identifier<'a> {
        let found = match self.rules.limit_by {
            LimitBy::Consumer => ctx
                .consumer
                .map(|c| c.id)
                .or_else(|| ctx.credential.map(|c| c.id))
                .map(Identifier::Id),
            LimitBy::Credential => ctx.credential.map(|c| Identifier::Id(c.id)),
            LimitBy::Service => ctx.service.map(|s| Identifier::Id(s.id)),
            LimitBy::Header => self
                .header
                .as_ref()
                .and_then(|h| ctx.request.headers.get(h))
                .map(|v| Identifier::Text(v.as_bytes())),
            LimitBy::Path if self.rules.config.path.as_deref() == Some(ctx.request.uri.path()) => {
                Some(Identifier::Text(ctx.request.uri.path().as_bytes()))
            }
            LimitBy::Path | LimitBy::Ip => None,
        };
        found.unwrap_or(Identifier::Ip(ctx.client_ip))
    }
}

/// How counters are keyed: a fast hash with a seed drawn once per process. The key is an identifier the
/// client may choose (a header, its address), so the seed keeps it from aiming keys at one shard or at
/// each other; the counters' own maps then need no second keyed hash ([`PluginState`]).
fn counter_keys() -> &'static foldhash::quality::FixedState {
    static KEYS: std::sync::OnceLock<foldhash::quality::FixedState> = std::sync::OnceLock::new();
    KEYS.get_or_init(|| {
        let seed = std::collections::hash_map::RandomState::new().hash_one(0x5eed_u64);
        foldhash::quality::FixedState::with_seed(seed)
    })
}

/// The route and service the plugin instance is configured on, which Kong's shared counters are keyed by
/// (so a service-wide or global instance counts every route's requests together); the all-zero UUID for
/// none.
#[derive(Clone, Copy)]
pub(crate) struct PluginScope {
    pub route: uuid::Uuid,
    pub service: uuid::Uuid,
}

impl PluginScope {
    pub(crate) fn of(entity: &sluice_model::Plugin) -> PluginScope {
        let id = |r: &Option<sluice_model::Ref>| r.as_ref().map_or(uuid::Uuid::nil(), |r| r.id);
        PluginScope {
            route: id(&entity.route),
            service: id(&entity.service),
        }
    }
}

impl RateLimiting {
    /// Per configured period (the first `limits.len()`): the hash of (instance, identifier, period) and
    /// the window's start and end. Inlined: its array is built in its caller's frame, not copied there.
    #[inline]
    fn slots(&self, ctx: &RequestCtx<'_>, now: u64) -> [(u64, u64, u64); PERIODS.len()] {
        let mut base = counter_keys().build_hasher();
        self.plugin_id.hash(&mut base);
        self.identifier(ctx).hash(&mut base);
        let mut slots = [(0u64, 0u64, 0u64); PERIODS.len()];
        for (slot, l) in slots.iter_mut().zip(&self.rules.limits) {
            let (start, end) = window::bounds(l.period, now);
            let mut h = base.clone();
            l.period.hash(&mut h);
            *slot = (h.finish(), start, end);
        }
        slots
    }

    /// `policy: local`: this node's counters.
    fn count_locally(&self, ctx: &mut RequestCtx<'_>, now: u64) -> Flow {
        let n = self.rules.limits.len();
        let slots = self.slots(ctx, now);
        // The count of each period, to undo them when one is exceeded (at most one per period: on the stack).
        let mut counts = [0u64; PERIODS.len()];
        let mut exceeded = false;
        for (i, l) in self.rules.limits.iter().enumerate() {
            let (key, start, end) = slots[i];
            counts[i] = self.state.increment(key, start, end - start, now);
            exceeded |= counts[i] > l.limit;
        }
        if exceeded {
            for (key, start, _) in &slots[..n] {
                self.state.decrement(*key, *start);
            }
        }
        self.rules.answer(ctx, &counts[..n], exceeded, now)
    }

    /// `policy: redis` with `sync_rate > 0`: on this node's counts, or on Redis for a window this node has
    /// not counted in yet.
    fn count_batched(
        &self,
        batch: &Arc<Batch>,
        shared: &Shared,
        ctx: &mut RequestCtx<'_>,
        now: u64,
    ) -> Flow {
        let n = self.rules.limits.len();
        let (mut slots, mut limits, mut counts) = (
            [(0, 0); PERIODS.len()],
            [0; PERIODS.len()],
            [0; PERIODS.len()],
        );
        for ((slot, limit), (l, (key, start, _))) in slots
            .iter_mut()
            .zip(&mut limits)
            .zip(self.rules.limits.iter().zip(self.slots(ctx, now)))
        {
            (*slot, *limit) = ((key, start), l.limit);
        }
        match batch.count(&slots[..n], &limits[..n], &mut counts[..n]) {
            Some(exceeded) => self.rules.answer(ctx, &counts[..n], exceeded, now),
            None => {
                let learn = (batch.clone(), slots[..n].to_vec());
                self.count_shared(shared.clone(), ctx, now, Some(learn))
            }
        }
    }

    /// This request's [`RedisKeys`], for `f`: the identifier is written once, and copied into the keys
    /// after the first, in this worker's scratch buffer (no allocation per request).
    fn with_redis_keys<T>(
        &self,
        ctx: &RequestCtx<'_>,
        now: u64,
        f: impl FnOnce(RedisKeys<'_>) -> T,
    ) -> T {
        thread_local! {
            static TEXT: std::cell::RefCell<Vec<u8>> = std::cell::RefCell::default();
        }
        TEXT.with_borrow_mut(|text| {
            text.clear();
            text.extend_from_slice(self.key_prefix.as_bytes());
            self.identifier(ctx).write_to(text);
            text.push(b':');
            let head_len = text.len();
            let mut ends = [0; PERIODS.len()];
            let mut start_ms = itoa::Buffer::new();
            for (i, (end, l)) in ends.iter_mut().zip(&self.rules.limits).enumerate() {
                if i > 0 {
                    text.extend_from_within(..head_len);
                }
                let (start, _) = window::bounds(l.period, now);
                text.extend_from_slice(start_ms.format(start * 1000).as_bytes());
                text.push(b':');
                text.extend_from_slice(l.period.name().as_bytes());
                *end = text.len();
            }
            f(RedisKeys { text, ends })
        })
    }

    /// `policy: redis` or `cluster`: one atomic check-and-count in the shared store, off the worker's
    /// thread of control. With `learn`, the reply seeds the batch's entries of those slots.
    fn count_shared(
        &self,
        shared: Shared,
        ctx: &RequestCtx<'_>,
        now: u64,
        learn: Option<(Arc<Batch>, Vec<batch::Slot>)>,
    ) -> Flow {
        let rules = self.rules.clone();
        let (ask, learn) = match shared {
            Shared::Redis(target) if learn.is_none() => {
                let write_id = |out: &mut Vec<u8>| self.identifier(ctx).write_to(out);
                let keyed = last_keyed::keyed(&rules, now, write_id, || {
                    self.with_redis_keys(ctx, now, |keys| {
                        keys.with_windows(&rules, now, redis::Keyed::new)
                    })
                });
                (Ask::Redis(target, keyed), None)
            }
            Shared::Redis(target) => self.with_redis_keys(ctx, now, |keys| {
                keys.with_windows(&rules, now, |windows| {
                    let learn = learn.map(|(batch, slots)| {
                        let known: Vec<Known> = (windows.iter().zip(&rules.limits))
                            .map(|((key, _, ttl_secs), l)| Known {
                                key: String::from_utf8_lossy(key).into_owned(),
                                ttl_secs: *ttl_secs,
                                end: window::bounds(l.period, now).1,
                            })
                            .collect();
                        (batch, slots, known)
                    });
                    (Ask::Redis(target, redis::Keyed::new(windows)), learn)
                })
            }),
            Shared::Cluster(counters) => {
                let scope = Scope {
                    identifier: self.identifier(ctx).text(),
                    route: self.scope.route,
                    service: self.scope.service,
                };
                let windows: Vec<Window> = (rules.limits.iter())
                    .map(|l| {
                        let (start, end) = window::bounds(l.period, now);
                        Window {
                            period: l.period.name().into(),
                            start,
                            limit: l.limit,
                            ttl_secs: window::kept_for(end - start),
                        }
                    })
                    .collect();
                // The batch is Redis's only.
                (Ask::Cluster(counters, scope, windows), None)
            }
        };
        Flow::Defer(Box::pin(async move {
            let mut counted = match ask.check_and_count().await {
                Ok(counted) => counted,
                Err(error) => {
                    failure_logged(&error);
                    return match rules.config.fault_tolerant {
                        true => Flow::Continue,
                        false => Flow::Respond(PluginResponse::message(
                            StatusCode::INTERNAL_SERVER_ERROR,
                            "An unexpected error occurred",
                        )),
                    };
                }
            };
            if let Some((batch, slots, known)) = learn {
                let limits: Vec<u64> = rules.limits.iter().map(|l| l.limit).collect();
                if !batch.learn(&slots, known, &counted, &limits) {
                    // Refused by this node's own counts: its windows are full.
                    counted.allowed = false;
                    counted.counts = limits;
                }
            }
            // A refused request's counts are the full windows; it is the one over the limit.
            if !counted.allowed {
                counted.counts.iter_mut().for_each(|c| *c += 1);
            }
            // Answered on the request's context, as the local policy is: the headers go straight into
            // the response's, not into a list of their own first.
            Flow::Then(Box::new(move |ctx| {
                rules.answer(ctx, &counted.counts, !counted.allowed, now)
            }))
        }))
    }
}

impl Rules {
    /// The answer for the counts after this request: on to the next plugin with the limit headers, or the
    /// refusal.
    fn answer(&self, ctx: &mut RequestCtx<'_>, counts: &[u64], exceeded: bool, now: u64) -> Flow {
        match self.verdict(counts, exceeded, now, &mut ctx.response_headers) {
            Some(resp) => Flow::Respond(resp),
            None => Flow::Continue,
        }
    }

    /// The response headers for the counts after this request, in `headers` (set together, in Kong's
    /// order), and the refusal when a window is over its limit. `counts[i]` belongs to `self.limits[i]`.
    fn verdict(
        &self,
        counts: &[u64],
        exceeded: bool,
        now: u64,
        headers: &mut AddedHeaders,
    ) -> Option<PluginResponse> {
        // (remaining, reset seconds, the period's limit) of the most restrictive period, for RateLimit-*.
        let mut tightest: Option<(u64, u64, &Limit)> = None;
        let mut fields = [(&RATELIMIT_LIMIT, 0); MOST_HEADERS];
        let mut n = 0;
        for (l, count) in self.limits.iter().zip(counts) {
            // `count` includes this request. A refused one is not counted, and Kong takes it off only the
            // period that stopped it (whose remaining is 0 either way): every period shows what it had.
            let used = match exceeded {
                true => count.saturating_sub(1),
                false => *count,
            };
            let remaining = l.limit.saturating_sub(used);
            let (_, end) = window::bounds(l.period, now);
            let reset = end.saturating_sub(now).max(1);
            if tightest.is_none_or(|(r, _, _)| remaining < r) {
                tightest = Some((remaining, reset, l));
            }
            if !self.config.hide_client_headers {
                fields[n..n + 2]
                    .copy_from_slice(&[(&l.limit_h, l.limit), (&l.remaining_h, remaining)]);
                n += 2;
            }
        }
        // The schema requires at least one period, so `tightest` is always set.
        if let Some((remaining, reset, l)) = tightest.filter(|_| !self.config.hide_client_headers) {
            fields[n..n + 3].copy_from_slice(&[
                (&RATELIMIT_LIMIT, l.limit),
                (&RATELIMIT_REMAINING, remaining),
                (&RATELIMIT_RESET, reset),
            ]);
            n += 3;
        }
        headers.insert_numbers(&fields[..n]);
        let reset = tightest.map_or(1, |(_, reset, _)| reset);
        exceeded.then(|| {
            let mut resp = PluginResponse::message(self.status, &self.config.error_message);
            resp.headers
                .insert(http::header::RETRY_AFTER, HeaderValue::from(reset));
            resp
        })
    }
}

/// Logs a failure of the shared counters at most every 10 s per process, with how many were not logged
/// in between.
pub(crate) fn failure_logged(error: &str) {
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
        tracing::error!(
            error,
            skipped,
            "rate-limiting: failed to count in the shared store"
        );
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
        match (&self.shared, &self.batch) {
            (None, _) => self.count_locally(ctx, now),
            (Some(shared), None) => self.count_shared(shared.clone(), ctx, now, None),
            (Some(shared), Some(batch)) => self.count_batched(batch, shared, ctx, now),
        }
    }
}

/// This plugin's phases: each handler is registered here, next to where it is implemented.
fn register(plugin: RateLimiting) -> Arc<dyn Plugin> {
    Registered::new("rate-limiting", plugin)
        .access(RateLimiting::access)
        .build()
}

#[cfg(test)]
mod tests;
