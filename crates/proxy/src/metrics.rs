//! Where the proxy records Kong's per-request metrics (the prometheus plugin): once per request, when the
//! response head is known, into the series the snapshot resolved for the route at compile time. The worker's
//! index picks its own shard, so recording is a handful of relaxed atomic adds.
//!
//! Measured at the head: `kong_request_latency_ms` is the time to the response head and bandwidth comes from
//! `Content-Length` (0 for streamed bodies without one) — exact for the small bodies gateways mostly carry.

use crate::respond::Timings;
use http::HeaderMap;
use sluice_metrics::{Counter, Flags, Observation, Registry, RouteSeries, Source};
use sluice_model::{Config, Route};
use std::cell::Cell;
use std::sync::{Arc, OnceLock};
use std::time::Instant;

thread_local! {
    static WORKER: Cell<usize> = const { Cell::new(0) };
}

/// Marks the calling thread as worker `index` (its metrics shard).
pub(crate) fn set_worker(index: usize) {
    WORKER.with(|w| w.set(index));
}

/// The process's series (one shard per CPU; worker indexes wrap).
pub fn registry() -> &'static Registry {
    static REGISTRY: OnceLock<Registry> = OnceLock::new();
    REGISTRY
        .get_or_init(|| Registry::new(std::thread::available_parallelism().map_or(1, |n| n.get())))
}

/// Upstream connections taken from the pool vs opened, per worker shard.
static POOL_REUSED: OnceLock<Counter> = OnceLock::new();
static POOL_OPENED: OnceLock<Counter> = OnceLock::new();

fn pool_counter(which: &'static OnceLock<Counter>) -> &'static Counter {
    which.get_or_init(|| Counter::new(std::thread::available_parallelism().map_or(1, |n| n.get())))
}

/// Counts an upstream connection checkout (hot path: one relaxed add on the worker's own cache line).
pub(crate) fn count_checkout(reused: bool) {
    let which = if reused { &POOL_REUSED } else { &POOL_OPENED };
    pool_counter(which).add(WORKER.with(Cell::get), 1);
}

/// The prometheus families of every route and the proxy's own counters, in the text format.
pub fn render(out: &mut String) {
    registry().render(out);
    sluice_metrics::kong::family(
        out,
        "sluice_upstream_connections_total",
        "counter",
        "Upstream connections used for requests: taken from the keep-alive pool (reused) or opened (new)",
    );
    for (kind, which) in [("reused", &POOL_REUSED), ("new", &POOL_OPENED)] {
        let _ = std::fmt::Write::write_fmt(
            out,
            format_args!(
                "sluice_upstream_connections_total{{kind=\"{kind}\"}} {}\n",
                pool_counter(which).value()
            ),
        );
    }
}

/// What the proxy knows of a request when its response head is ready.
pub(crate) struct Finished<'a> {
    pub source: Source,
    pub started: Instant,
    /// Present when the upstream answered.
    pub timings: Option<&'a Timings>,
    /// The request's `Content-Length`.
    pub bytes_in: u64,
    /// The consumer's slot, for `per_consumer`.
    pub consumer: Option<u32>,
}

/// A route's series and the flags of the prometheus instance that applies to it.
pub(crate) struct RouteMeter {
    flags: Flags,
    series: Arc<RouteSeries>,
}

impl RouteMeter {
    /// The meter for `route` (None: requests that matched no route), labelled as Kong labels them: the
    /// service's name (else its host) and the route's name (else its id).
    pub fn new(config: &Config, route: Option<&Route>, flags: Option<Flags>) -> Option<RouteMeter> {
        let flags = flags?;
        let service = route
            .and_then(|r| r.service)
            .and_then(|s| config.services.iter().find(|x| x.id == s.id))
            .map_or(String::new(), |s| {
                s.name.clone().unwrap_or_else(|| s.host.clone())
            });
        let route = route.map_or(String::new(), |r| {
            r.name.clone().unwrap_or_else(|| r.id.to_string())
        });
        let series = registry().series(&service, &route);
        if flags.per_consumer {
            series.enable_consumers();
        }
        Some(RouteMeter { flags, series })
    }

    /// Whether requests are counted per consumer (the caller then passes the consumer's slot).
    pub fn per_consumer(&self) -> bool {
        self.flags.per_consumer
    }

    /// Records one request whose response head is `status` with `headers`.
    pub fn record(&self, status: u16, headers: &HeaderMap, f: Finished<'_>) {
        let ms = |d: std::time::Duration| d.as_millis() as u64;
        let observation = Observation {
            status,
            source: f.source,
            kong_ms: f.timings.map(|t| ms(t.proxy)),
            upstream_ms: f.timings.map(|t| ms(t.upstream)),
            request_ms: ms(f.started.elapsed()),
            bytes_in: f.bytes_in,
            bytes_out: content_length(headers),
            consumer: f.consumer,
        };
        self.series
            .record(WORKER.with(Cell::get), self.flags, &observation);
    }
}

/// Stable metric slots of a config's consumers (label: username, else id), for `per_consumer`.
pub(crate) fn consumer_slots(config: &Config) -> rustc_hash::FxHashMap<uuid::Uuid, u32> {
    config
        .consumers
        .iter()
        .map(|c| {
            let name = c.username.clone().unwrap_or_else(|| c.id.to_string());
            (c.id, registry().consumer_slot(&name))
        })
        .collect()
}

/// The `Content-Length` of a message (0 when absent).
pub(crate) fn content_length(headers: &HeaderMap) -> u64 {
    headers
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}
