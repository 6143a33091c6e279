//! Kong's per-request metrics (the prometheus plugin): a request is observed once, when its response head is
//! known (after `header_filter`), and the request driver ([`crate::handler`]) records that [`Count`] in one
//! place, [`record`], into the series the snapshot resolved for the route at compile time. The worker's index
//! picks its own shard, so recording is a handful of relaxed atomic adds.
//!
//! A stream session is observed once, when it ends ([`StreamMeter`], recorded by `crate::stream`).
//!
//! Measured at the head: `kong_request_latency_ms` is the time to the response head and bandwidth comes from
//! `Content-Length` (0 for streamed bodies without one) — exact for the small bodies gateways mostly carry.

use crate::respond::Timings;
use crate::snapshot::Snapshot;
use http::HeaderMap;
use sluice_metrics::{
    Flags, Observation, Registry, RouteSeries, SessionObservation, Source, StreamSeries,
};
use sluice_model::{Config, Route};
use sluice_router::stream::StreamProtocols;
use std::sync::{Arc, OnceLock};
use std::time::Instant;

/// The process's series (one shard per CPU; worker indexes wrap).
pub fn registry() -> &'static Registry {
    static REGISTRY: OnceLock<Registry> = OnceLock::new();
    REGISTRY
        .get_or_init(|| Registry::new(std::thread::available_parallelism().map_or(1, |n| n.get())))
}

/// The prometheus families of every route and the proxy's own counters, in the text format.
pub fn render(out: &mut String) {
    registry().render(out);
    sluice_upstream::metrics::render(out);
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

/// A route's series and the flags of the prometheus instance that applies to it. A later snapshot keeps
/// an unchanged route's meter (a clone: the same series).
#[derive(Clone)]
pub(crate) struct RouteMeter {
    flags: Flags,
    series: Arc<RouteSeries>,
}

impl RouteMeter {
    /// The meter for `route`, labelled as Kong labels them: the service's name (else its host) and the
    /// route's name (else its id).
    pub fn new(config: &Config, route: &Route, flags: Option<Flags>) -> Option<RouteMeter> {
        let flags = flags?;
        let (service, route) = labels(config, route);
        let series = registry().series(&service, &route);
        if flags.per_consumer {
            series.enable_consumers();
        }
        Some(RouteMeter { flags, series })
    }

    /// The flags it was made with.
    pub fn flags(&self) -> Flags {
        self.flags
    }

    /// Whether requests are counted per consumer (the caller then passes the consumer's slot).
    pub fn per_consumer(&self) -> bool {
        self.flags.per_consumer
    }

    /// Observes one request whose response head is `status` with `headers`, for [`record`].
    pub fn observe(
        &self,
        series: Series,
        status: u16,
        headers: &HeaderMap,
        f: Finished<'_>,
    ) -> Count {
        self.observe_length(series, status, content_length(headers), f)
    }

    /// [`RouteMeter::observe`] for a response whose `Content-Length` (its egress bytes) is `bytes_out`.
    pub fn observe_length(
        &self,
        series: Series,
        status: u16,
        bytes_out: u64,
        f: Finished<'_>,
    ) -> Count {
        let ms = |d: std::time::Duration| d.as_millis() as u64;
        let request_ms = ms(f.started.elapsed());
        let observation = Observation {
            status,
            source: f.source,
            // Kong's `latencies.kong`: the proxy latency, or for an answer the gateway made itself the
            // time until it was made (`KONG_RESPONSE_LATENCY`), which is the request's so far.
            kong_ms: Some(f.timings.map_or(request_ms, |t| ms(t.proxy))),
            upstream_ms: f.timings.map(|t| ms(t.upstream)),
            request_ms,
            bytes_in: f.bytes_in,
            bytes_out,
            consumer: f.consumer,
        };
        Count {
            series,
            observation,
        }
    }
}

/// Kong's labels of a route's series: the service's name (else its host, else empty) and the route's name
/// (else its id).
fn labels(config: &Config, route: &Route) -> (String, String) {
    let service = (route.service)
        .and_then(|s| config.services.iter().find(|x| x.id == s.id))
        .map_or(String::new(), |s| {
            s.name.clone().unwrap_or_else(|| s.host.clone())
        });
    let name = route.name.clone().unwrap_or_else(|| route.id.to_string());
    (service, name)
}

/// A stream route's series and the prometheus instance that applies to it (the stream protocols it
/// lists and its flags). Kong counts only routed sessions.
pub(crate) struct StreamMeter {
    protocols: StreamProtocols,
    flags: Flags,
    series: Arc<StreamSeries>,
}

impl StreamMeter {
    pub fn new(
        config: &Config,
        route: &Route,
        instance: Option<(StreamProtocols, Flags)>,
    ) -> Option<StreamMeter> {
        let (protocols, flags) = instance?;
        let (service, route) = labels(config, route);
        Some(StreamMeter {
            protocols,
            flags,
            series: registry().stream_series(&service, &route),
        })
    }

    /// Records a finished session of `protocol` when the instance lists that protocol.
    pub fn record(&self, protocol: StreamProtocols, observation: &SessionObservation) {
        if self.protocols.intersects(protocol) {
            self.series
                .record(sluice_upstream::metrics::worker(), self.flags, observation);
        }
    }
}

/// The series a request is counted in: its route's (by index in the snapshot). A request that matched no
/// route has none, as Kong's exporter skips a request without a route.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Series(pub usize);

impl Series {
    /// The meter of this series in `snap`, when a prometheus instance applies to it.
    #[inline]
    pub fn meter(self, snap: &Snapshot) -> Option<&RouteMeter> {
        snap.routes.get(self.0).and_then(|r| r.metrics.as_ref())
    }
}

/// A request observed when its response head was ready, waiting to be recorded.
pub(crate) struct Count {
    series: Series,
    observation: Observation,
}

/// The one place a request is counted in its route's (or the unrouted) series; `snap` is the snapshot
/// the request was routed on. Nothing to do when no prometheus instance applies.
#[inline]
pub(crate) fn record(snap: &Snapshot, count: Option<Count>) {
    let Some(Count {
        series,
        observation,
    }) = count
    else {
        return;
    };
    if let Some(m) = series.meter(snap) {
        m.series
            .record(sluice_upstream::metrics::worker(), m.flags, &observation);
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

/// Kong's ingress bytes of a request (nginx's `$request_length`): its head as HTTP/1.1 text and its
/// body's `Content-Length` (a body without one, chunked, counts its head only).
pub(crate) fn request_length(req: &http::request::Parts) -> u64 {
    sluice_plugins::logging::serialize::request_head_len(req) + content_length(&req.headers)
}

/// The `Content-Length` of a message (0 when absent).
pub(crate) fn content_length(headers: &HeaderMap) -> u64 {
    headers
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}
