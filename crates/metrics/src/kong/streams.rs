//! Kong's per-session metric families of the stream subsystem: `kong_stream_sessions_total` (labels
//! service, route, code, source, workspace), `kong_session_duration_ms`, and the sessions' share of
//! `kong_kong_latency_ms` (rendered in that family beside the requests'). Kept as the HTTP series are:
//! found per (service, route) when a snapshot is compiled, recorded with relaxed atomics in the worker's
//! own shard when a session ends.
//!
//! As in Kong's exporter (3.x), a session's `source` is `service` when it was proxied (a target was
//! tried) and `kong` otherwise, and stream sessions add nothing to `kong_bandwidth_bytes` (Kong's stream
//! handler reads the sizes from a `response` a stream record never has).

use super::{add, family, new_slots, pack, unpack, Flags, Registry, Slot, Source, CODE_SLOTS};
use crate::histogram::{Histogram, Totals, KONG_LATENCY_BUCKETS, UPSTREAM_LATENCY_BUCKETS};
use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// What one finished session contributes.
#[derive(Debug, Clone, Copy)]
pub struct SessionObservation {
    /// nginx's stream `$status`.
    pub status: u16,
    /// A target was tried (Kong's `KONG_PROXIED`).
    pub proxied: bool,
    pub kong_ms: u64,
    pub session_ms: u64,
}

/// One worker's counters for one stream route.
#[repr(align(64))]
struct Shard {
    codes: Box<[Slot]>,
    overflow: AtomicU64,
    kong: Histogram,
    session: Histogram,
}

/// The stream series of one (service, route) label pair: one shard per worker.
pub struct StreamSeries {
    labels: String,
    shards: Box<[Shard]>,
}

impl StreamSeries {
    /// Records one session on behalf of `worker` (wrapped to the shard count).
    pub fn record(&self, worker: usize, flags: Flags, o: &SessionObservation) {
        let shard = &self.shards[worker % self.shards.len()];
        if flags.status_code {
            let source = match o.proxied {
                true => Source::Service,
                false => Source::Error,
            };
            if !add(&shard.codes, pack(None, o.status, source)) {
                shard.overflow.fetch_add(1, Ordering::Relaxed);
            }
        }
        if flags.latency {
            shard.kong.observe(o.kong_ms);
            shard.session.observe(o.session_ms);
        }
    }

    fn histogram(&self, out: &mut String, name: &str, pick: fn(&Shard) -> &Histogram) {
        let mut totals = Totals::new(pick(&self.shards[0]).bounds());
        for shard in self.shards.iter() {
            totals.add(pick(shard));
        }
        if totals.count() > 0 {
            totals.render(out, name, &format!("{},workspace=\"default\"", self.labels));
        }
    }
}

impl Registry {
    /// The stream series of a (service, route) pair, created on first use. Call when compiling a snapshot.
    pub fn stream_series(&self, service: &str, route: &str) -> Arc<StreamSeries> {
        let mut all = self.streams.lock().unwrap_or_else(|e| e.into_inner());
        all.entry((service.to_string(), route.to_string()))
            .or_insert_with(|| {
                Arc::new(StreamSeries {
                    labels: super::labels(service, route),
                    shards: (0..self.workers)
                        .map(|_| Shard {
                            codes: new_slots(CODE_SLOTS),
                            overflow: AtomicU64::new(0),
                            kong: Histogram::new(KONG_LATENCY_BUCKETS),
                            session: Histogram::new(UPSTREAM_LATENCY_BUCKETS),
                        })
                        .collect(),
                })
            })
            .clone()
    }

    pub(super) fn stream_snapshot(&self) -> Vec<Arc<StreamSeries>> {
        let all = self.streams.lock().unwrap_or_else(|e| e.into_inner());
        all.values().cloned().collect()
    }
}

/// The sessions' samples of `kong_kong_latency_ms` (its `# HELP` is already out).
pub(super) fn render_kong_latency(all: &[Arc<StreamSeries>], out: &mut String) {
    for s in all {
        s.histogram(out, "kong_kong_latency_ms", |x| &x.kong);
    }
}

/// The stream families, announced once some prometheus instance applies to a stream route.
pub(super) fn render(all: &[Arc<StreamSeries>], out: &mut String) {
    if all.is_empty() {
        return;
    }
    let name = "kong_stream_sessions_total";
    family(
        out,
        name,
        "counter",
        "Stream status codes per service/route in Kong",
    );
    for s in all {
        let mut counts = std::collections::BTreeMap::<(u16, Source), u64>::new();
        for shard in s.shards.iter() {
            for (k, c) in shard.codes.iter() {
                let key = k.load(Ordering::Relaxed);
                if key != 0 {
                    let (_, code, source) = unpack(key);
                    *counts.entry((code, source)).or_default() += c.load(Ordering::Relaxed);
                }
            }
            let overflow = shard.overflow.load(Ordering::Relaxed);
            if overflow > 0 {
                *counts.entry((0, Source::Error)).or_default() += overflow;
            }
        }
        for ((code, source), n) in counts {
            let source = match source {
                Source::Service => "service",
                _ => "kong",
            };
            let _ = writeln!(
                out,
                "{name}{{{},code=\"{code}\",source=\"{source}\",workspace=\"default\"}} {n}",
                s.labels
            );
        }
    }
    let name = "kong_session_duration_ms";
    family(
        out,
        name,
        "histogram",
        "latency incurred in stream session for each service/route in Kong",
    );
    for s in all {
        s.histogram(out, name, |x| &x.session);
    }
}
