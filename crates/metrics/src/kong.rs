//! Kong's per-request metric families (`kong_http_requests_total`, the three latency histograms,
//! `kong_bandwidth_bytes`), stored per (service, route) and per worker.
//!
//! A route's series are found when a snapshot is compiled ([`Registry::series`]: a mutex, at compile time
//! only) and kept for the life of the process, so counters stay monotonic across reloads and a route that
//! keeps its names keeps its series. Recording ([`RouteSeries::record`]) touches only relaxed atomics in the
//! calling worker's own shard: no lock, no allocation. Status codes go into a small table of claimable
//! slots (code and source packed in one key), so any code is counted exactly without a 500-slot array per
//! route. The stream subsystem's families are kept the same way ([`streams`]).

mod streams;

pub use streams::{SessionObservation, StreamSeries};

use crate::histogram::{Histogram, Totals, KONG_LATENCY_BUCKETS, UPSTREAM_LATENCY_BUCKETS};
use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// Distinct (code, source) pairs counted exactly per route and worker; more are counted as code 0.
const CODE_SLOTS: usize = 24;
/// Distinct (consumer, code, source) triples per route and worker when `per_consumer` is on; more are
/// counted without their consumer.
const CONSUMER_SLOTS: usize = 256;

/// Which families a prometheus plugin instance asked for (Kong's config flags).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Flags {
    pub status_code: bool,
    pub latency: bool,
    pub bandwidth: bool,
    /// Requests of identified consumers are counted per consumer (Kong's `per_consumer`).
    pub per_consumer: bool,
}

/// Who produced a response, as Kong's `kong.response.get_source()` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Source {
    /// The upstream service answered.
    Service,
    /// A plugin ended the request (`kong.response.exit`).
    Exit,
    /// The gateway failed the request (no route, upstream error, ...).
    Error,
}

impl Source {
    fn name(self) -> &'static str {
        match self {
            // Kong's exporter labels every answer not from the service `kong`.
            Source::Service => "service",
            Source::Exit | Source::Error => "kong",
        }
    }

    /// The counted slot: Kong's label has two values, so an exit and an error share one.
    fn index(self) -> u64 {
        match self {
            Source::Service => 0,
            Source::Exit | Source::Error => 1,
        }
    }

    fn from_index(i: u32) -> Source {
        match i {
            0 => Source::Service,
            _ => Source::Exit,
        }
    }
}

/// What one finished request contributes.
#[derive(Debug, Clone, Copy)]
pub struct Observation {
    pub status: u16,
    pub source: Source,
    /// Time in the gateway before the upstream was contacted (None: not proxied).
    pub kong_ms: Option<u64>,
    /// Time from sending to the upstream until its response head (None: not proxied).
    pub upstream_ms: Option<u64>,
    pub request_ms: u64,
    pub bytes_in: u64,
    pub bytes_out: u64,
    /// The consumer's slot ([`Registry::consumer_slot`]) when one was identified.
    pub consumer: Option<u32>,
}

/// A claimable counter: a packed key ([`pack`]; 0 = free) and its count.
type Slot = (AtomicU64, AtomicU64);

/// Packs (consumer slot, status, source) into a slot key; never 0.
fn pack(consumer: Option<u32>, status: u16, source: Source) -> u64 {
    let consumer = consumer.map_or(0, |c| u64::from(c) + 1);
    ((consumer << 20) | (u64::from(status) << 2) | source.index()) + 1
}

fn unpack(key: u64) -> (Option<u32>, u16, Source) {
    let key = key - 1;
    let consumer = (key >> 20) as u32;
    let consumer = consumer.checked_sub(1);
    (
        consumer,
        ((key >> 2) & 0x3ffff) as u16,
        Source::from_index((key & 3) as u32),
    )
}

/// Adds one to the slot holding `key`, claiming a free slot if none does; false when all are taken.
fn add(slots: &[Slot], key: u64) -> bool {
    add_n(slots, key, 1)
}

/// Adds `n` to the slot holding `key` (never 0), claiming a free slot if none does; false when all are
/// taken.
fn add_n(slots: &[Slot], key: u64, n: u64) -> bool {
    for (k, c) in slots {
        let current = k.load(Ordering::Relaxed);
        let mine = current == key
            || (current == 0
                && match k.compare_exchange(0, key, Ordering::Relaxed, Ordering::Relaxed) {
                    Ok(_) => true,
                    Err(other) => other == key,
                });
        if mine {
            c.fetch_add(n, Ordering::Relaxed);
            return true;
        }
    }
    false
}

fn new_slots(n: usize) -> Box<[Slot]> {
    (0..n)
        .map(|_| (AtomicU64::new(0), AtomicU64::new(0)))
        .collect()
}

/// One worker's counters for one route, on its own cache lines.
#[repr(align(64))]
struct Shard {
    codes: Box<[Slot]>,
    overflow: AtomicU64,
    kong: Histogram,
    upstream: Histogram,
    request: Histogram,
    ingress: AtomicU64,
    egress: AtomicU64,
    /// Allocated when a `per_consumer` instance first applies to the route (at compile time).
    consumers: OnceLock<Box<[Slot]>>,
    /// Bytes of identified consumers' requests, keyed by [`bytes_key`]; allocated with `consumers`.
    consumer_bytes: OnceLock<Box<[Slot]>>,
}

/// The [`Shard::consumer_bytes`] key of a consumer's bytes in one direction (never 0).
fn bytes_key(consumer: u32, ingress: bool) -> u64 {
    ((u64::from(consumer) + 1) << 1) | u64::from(ingress)
}

impl Shard {
    fn new() -> Shard {
        Shard {
            codes: new_slots(CODE_SLOTS),
            overflow: AtomicU64::new(0),
            kong: Histogram::new(KONG_LATENCY_BUCKETS),
            upstream: Histogram::new(UPSTREAM_LATENCY_BUCKETS),
            request: Histogram::new(UPSTREAM_LATENCY_BUCKETS),
            ingress: AtomicU64::new(0),
            egress: AtomicU64::new(0),
            consumers: OnceLock::new(),
            consumer_bytes: OnceLock::new(),
        }
    }

    /// Counts a request by code and source, and by consumer when `consumer` is given and the route has
    /// a consumer table with room; whatever does not fit is counted as code 0.
    fn count(&self, consumer: Option<u32>, status: u16, source: Source) {
        let by_consumer = consumer
            .zip(self.consumers.get())
            .is_some_and(|(c, table)| add(table, pack(Some(c), status, source)));
        if !by_consumer && !add(&self.codes, pack(None, status, source)) {
            self.overflow.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Adds a request's bytes, under its consumer when `consumer` is given and the table has room.
    fn bytes(&self, consumer: Option<u32>, o: &Observation) {
        let table = consumer.zip(self.consumer_bytes.get());
        for (ingress, n, total) in [
            (true, o.bytes_in, &self.ingress),
            (false, o.bytes_out, &self.egress),
        ] {
            let kept = n == 0 || table.is_some_and(|(c, t)| add_n(t, bytes_key(c, ingress), n));
            if !kept {
                total.fetch_add(n, Ordering::Relaxed);
            }
        }
    }

    /// (consumer slot, ingress) → bytes counted under that consumer.
    fn consumer_bytes(&self) -> impl Iterator<Item = ((u32, bool), u64)> + '_ {
        let slots = self.consumer_bytes.get().map_or(&[][..], |t| &t[..]);
        slots.iter().filter_map(|(k, n)| {
            let key = k.load(Ordering::Relaxed);
            let consumer = u32::try_from((key >> 1).checked_sub(1)?).ok()?;
            Some(((consumer, key & 1 == 1), n.load(Ordering::Relaxed)))
        })
    }
}

/// The series of one (service, route) label pair: one shard per worker.
pub struct RouteSeries {
    /// `service="…",route="…"`, escaped, ready to render.
    labels: String,
    shards: Box<[Shard]>,
}

impl RouteSeries {
    /// Records one request on behalf of `worker` (wrapped to the shard count). Hot path.
    pub fn record(&self, worker: usize, flags: Flags, o: &Observation) {
        let shard = &self.shards[worker % self.shards.len()];
        if flags.status_code {
            let consumer = o.consumer.filter(|_| flags.per_consumer);
            shard.count(consumer, o.status, o.source);
        }
        if flags.latency {
            if let Some(ms) = o.kong_ms {
                shard.kong.observe(ms);
            }
            if let Some(ms) = o.upstream_ms {
                shard.upstream.observe(ms);
            }
            shard.request.observe(o.request_ms);
        }
        if flags.bandwidth {
            shard.bytes(o.consumer.filter(|_| flags.per_consumer), o);
        }
    }

    /// Prepares the per-consumer tables (call when compiling a snapshot whose instance has `per_consumer`).
    pub fn enable_consumers(&self) {
        for shard in self.shards.iter() {
            shard.consumers.get_or_init(|| new_slots(CONSUMER_SLOTS));
            shard
                .consumer_bytes
                .get_or_init(|| new_slots(CONSUMER_SLOTS));
        }
    }

    /// (consumer slot, code, source) → count, over every worker; overflow is code 0 without consumer.
    fn counts(&self) -> BTreeMap<(Option<u32>, u16, Source), u64> {
        let mut out = BTreeMap::new();
        for shard in self.shards.iter() {
            let tables = [Some(&shard.codes), shard.consumers.get()];
            for (k, c) in tables.into_iter().flatten().flat_map(|t| t.iter()) {
                let key = k.load(Ordering::Relaxed);
                if key != 0 {
                    *out.entry(unpack(key)).or_default() += c.load(Ordering::Relaxed);
                }
            }
            let overflow = shard.overflow.load(Ordering::Relaxed);
            if overflow > 0 {
                *out.entry((None, 0, Source::Exit)).or_default() += overflow;
            }
        }
        out
    }
}

/// Every route series of the process.
pub struct Registry {
    workers: usize,
    series: Mutex<BTreeMap<(String, String), Arc<RouteSeries>>>,
    /// The stream routes' series, by the same labels.
    streams: Mutex<BTreeMap<(String, String), Arc<StreamSeries>>>,
    /// Consumer label values by slot; slots are stable for the life of the process.
    consumers: Mutex<(std::collections::HashMap<String, u32>, Vec<String>)>,
}

/// A label value escaped for the text format.
pub fn escape(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

impl Registry {
    /// A registry whose series have one shard per worker.
    pub fn new(workers: usize) -> Registry {
        Registry {
            workers: workers.max(1),
            series: Mutex::new(BTreeMap::new()),
            streams: Mutex::new(BTreeMap::new()),
            consumers: Mutex::new(Default::default()),
        }
    }

    /// The stable slot of a consumer label (its username, else its id). Call when compiling a snapshot.
    pub fn consumer_slot(&self, name: &str) -> u32 {
        let mut c = self.consumers.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(slot) = c.0.get(name) {
            return *slot;
        }
        let slot = c.1.len() as u32;
        c.1.push(escape(name));
        c.0.insert(name.to_string(), slot);
        slot
    }

    /// The series of a (service, route) pair, created on first use. Call when compiling a snapshot.
    pub fn series(&self, service: &str, route: &str) -> Arc<RouteSeries> {
        let mut all = self.series.lock().unwrap_or_else(|e| e.into_inner());
        all.entry((service.to_string(), route.to_string()))
            .or_insert_with(|| {
                Arc::new(RouteSeries {
                    labels: labels(service, route),
                    shards: (0..self.workers).map(|_| Shard::new()).collect(),
                })
            })
            .clone()
    }

    /// Appends Kong's per-request families in the Prometheus text format. Families without samples are
    /// still announced (`# HELP`/`# TYPE`), as Kong's exporter does.
    pub fn render(&self, out: &mut String) {
        let all: Vec<Arc<RouteSeries>> = self
            .series
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .cloned()
            .collect();
        let names = self
            .consumers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .1
            .clone();
        family(
            out,
            "kong_http_requests_total",
            "counter",
            "HTTP status codes per consumer/service/route in Kong",
        );
        for s in &all {
            for ((consumer, code, source), n) in s.counts() {
                let consumer = consumer
                    .and_then(|c| names.get(c as usize))
                    .map_or("", String::as_str);
                let _ = writeln!(
                    out,
                    "kong_http_requests_total{{{},code=\"{code}\",source=\"{}\",workspace=\"default\",consumer=\"{consumer}\"}} {n}",
                    s.labels,
                    source.name()
                );
            }
        }
        type Pick = fn(&Shard) -> &Histogram;
        let histograms: [(&str, &str, Pick); 3] = [
            (
                "kong_kong_latency_ms",
                "Latency added by Kong and enabled plugins for each service/route in Kong",
                |s| &s.kong,
            ),
            (
                "kong_upstream_latency_ms",
                "Latency added by upstream response for each service/route in Kong",
                |s| &s.upstream,
            ),
            (
                "kong_request_latency_ms",
                "Total latency incurred during requests for each service/route in Kong",
                |s| &s.request,
            ),
        ];
        let streams = self.stream_snapshot();
        for (name, help, pick) in histograms {
            family(out, name, "histogram", help);
            if name == "kong_kong_latency_ms" {
                streams::render_kong_latency(&streams, out);
            }
            for s in &all {
                let mut totals = Totals::new(pick(&s.shards[0]).bounds());
                for shard in s.shards.iter() {
                    totals.add(pick(shard));
                }
                if totals.count() > 0 {
                    totals.render(out, name, &format!("{},workspace=\"default\"", s.labels));
                }
            }
        }
        family(
            out,
            "kong_bandwidth_bytes",
            "counter",
            "Total bandwidth (ingress/egress) throughput in bytes",
        );
        for s in &all {
            // (consumer name, ingress) → bytes; "" for requests without an identified consumer.
            let mut bytes: BTreeMap<(&str, bool), u64> = BTreeMap::new();
            for shard in s.shards.iter() {
                *bytes.entry(("", false)).or_default() += shard.egress.load(Ordering::Relaxed);
                *bytes.entry(("", true)).or_default() += shard.ingress.load(Ordering::Relaxed);
                for ((consumer, ingress), n) in shard.consumer_bytes() {
                    let name = names.get(consumer as usize).map_or("", String::as_str);
                    *bytes.entry((name, ingress)).or_default() += n;
                }
            }
            for ((consumer, ingress), n) in bytes.into_iter().filter(|(_, n)| *n > 0) {
                let direction = if ingress { "ingress" } else { "egress" };
                let _ = writeln!(
                    out,
                    "kong_bandwidth_bytes{{{},direction=\"{direction}\",workspace=\"default\",consumer=\"{consumer}\"}} {n}",
                    s.labels
                );
            }
        }
        streams::render(&streams, out);
    }
}

/// `service="…",route="…"`, escaped, ready to render.
fn labels(service: &str, route: &str) -> String {
    format!(
        "service=\"{}\",route=\"{}\"",
        escape(service),
        escape(route)
    )
}

/// The `# HELP` and `# TYPE` lines of a family.
pub fn family(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
}

#[cfg(test)]
mod tests;
