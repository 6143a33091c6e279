//! What `statsd` and `datadog` share: the log phase that packs a [`Sample`] of the request onto the logging
//! queue (the worker never formats a line nor waits on I/O), the StatsD line writer
//! (`prefix.stat:value|type|@rate`), and the sink that writes each batch's lines on the `sluice-log`
//! thread and sends them over UDP (one datagram per line, or packed up to `udp_packet_size`) or TCP.
//!
//! Each plugin only says which lines a sample makes ([`Format`]); everything else is here.

pub(crate) mod sample;
mod sink;
#[cfg(test)]
pub(crate) mod tests;

pub use sample::{ConsumerRef, Sample, ServiceRef};
pub use sink::{MetricSink, Transport};

use crate::ctx::{LogRecord, RequestCtx};
use crate::logging::queue::{Queue, QueueConfig};
use crate::logging::runtime;
use crate::plugin::{Plugin, Registered};
use crate::registry::BuildCtx;
use crate::stream::SessionRecord;
use std::sync::Arc;

/// The lines one plugin writes for a request. Runs on the `sluice-log` thread.
pub trait Format: Send + Sync + 'static {
    fn write(&self, sample: &Sample<'_>, lines: &mut Lines);
}

/// The lines of one batch, each followed by `\n` in one buffer, so a run of lines is one contiguous
/// slice: a packed UDP datagram (lines joined by `\n`) or what TCP sends (every line ends in `\n`).
#[derive(Debug, Default)]
pub struct Lines {
    buf: Vec<u8>,
    /// Where each line ends (its `\n` excluded).
    ends: Vec<usize>,
}

impl Lines {
    /// Empties the buffers (keeping them) and makes room for `lines` lines of about `line_bytes` each.
    pub fn clear_for(&mut self, lines: usize, line_bytes: usize) {
        self.buf.clear();
        self.ends.clear();
        self.buf.reserve(lines * line_bytes);
        self.ends.reserve(lines);
    }

    /// Appends one line written by `f`.
    pub fn push(&mut self, f: impl FnOnce(&mut Vec<u8>)) {
        f(&mut self.buf);
        self.ends.push(self.buf.len());
        self.buf.push(b'\n');
    }

    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Appends `prefix.parts…:value|suffix[|@rate]`, a line without tags.
    pub fn metric(
        &mut self,
        prefix: &str,
        parts: &[&str],
        value: Value<'_>,
        suffix: &str,
        rate: Option<f64>,
    ) {
        self.push(|out| {
            write_head(out, prefix, parts);
            write_value(out, value, suffix, rate);
        });
    }

    /// Lines `from..=to` joined by `\n` (no trailing newline).
    pub fn span(&self, from: usize, to: usize) -> &[u8] {
        let start = if from == 0 {
            0
        } else {
            self.ends[from - 1] + 1
        };
        &self.buf[start..self.ends[to]]
    }

    /// Every line, each followed by `\n`.
    pub fn all(&self) -> &[u8] {
        &self.buf
    }

    /// The lines as strings (for tests).
    #[cfg(test)]
    pub fn to_vec(&self) -> Vec<String> {
        (0..self.len())
            .map(|i| String::from_utf8_lossy(self.span(i, i)).into_owned())
            .collect()
    }
}

/// A metric's value: a number, or the member of a set (`unique_users`).
#[derive(Debug, Clone, Copy)]
pub enum Value<'a> {
    Int(i64),
    Text(&'a str),
}

/// Writes `prefix.` + `stat` (already joined), then `:value|kind` and `|@rate` when the rate is not 1,
/// as Kong's loggers do (the rate printed as Lua prints numbers). Tags, if any, are the caller's.
pub fn write_head(out: &mut Vec<u8>, prefix: &str, stat: &[&str]) {
    out.extend_from_slice(prefix.as_bytes());
    for part in stat {
        out.push(b'.');
        out.extend_from_slice(part.as_bytes());
    }
}

/// `:value|kind[|@rate]`.
pub fn write_value(out: &mut Vec<u8>, value: Value<'_>, kind: &str, rate: Option<f64>) {
    out.push(b':');
    match value {
        Value::Int(n) => out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes()),
        Value::Text(s) => out.extend_from_slice(s.as_bytes()),
    }
    out.push(b'|');
    out.extend_from_slice(kind.as_bytes());
    if let Some(rate) = rate.filter(|r| *r != 1.0) {
        out.extend_from_slice(b"|@");
        sluice_cluster::lua_number::push_lua_number(out, rate);
    }
}

/// The StatsD type suffix of Kong's `stat_type` names (`distribution` is datadog's).
pub fn stat_suffix(stat_type: &str) -> &'static str {
    match stat_type {
        "gauge" => "g",
        "counter" => "c",
        "timer" => "ms",
        "histogram" => "h",
        "meter" => "m",
        "set" => "s",
        "distribution" => "d",
        _ => "c",
    }
}

/// Kong's `consumer_identifier`: which of the consumer's fields names it in metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ConsumerId {
    #[serde(rename = "consumer_id")]
    Id,
    CustomId,
    Username,
}

/// The consumer's identifier (None without a consumer, or when that field is not set); an id is
/// written into `buf`.
pub fn consumer_value<'a>(
    consumer: Option<&ConsumerRef<'a>>,
    which: ConsumerId,
    buf: &'a mut [u8; 45],
) -> Option<&'a str> {
    let c = consumer?;
    match which {
        ConsumerId::Id => Some(c.id.hyphenated().encode_lower(buf)),
        ConsumerId::CustomId => c.custom_id,
        ConsumerId::Username => c.username,
    }
}

/// The node's host name with dots as underscores (Kong's `hostname` in metric names and tags).
pub fn node_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().replace('.', "_"))
        .unwrap_or_else(|_| "localhost".into())
}

/// Which statuses are measured (statsd's `allow_status_codes`): Kong's ranges in order, the first that
/// holds the status lets it through. A range Kong's log handler cannot read (None) stops the search
/// with "not measured", as the Lua error it raises there does.
#[derive(Debug, Clone, Default)]
pub struct StatusFilter(Option<Box<[StatusRange]>>);

/// `low..=high`, or None for a range Kong's handler cannot read.
pub type StatusRange = Option<(u16, u16)>;

impl StatusFilter {
    /// Every status is measured (no `allow_status_codes`).
    pub fn all() -> StatusFilter {
        StatusFilter(None)
    }

    pub fn ranges(ranges: Vec<StatusRange>) -> StatusFilter {
        StatusFilter(Some(ranges.into()))
    }

    pub fn allows(&self, status: u16) -> bool {
        let Some(ranges) = &self.0 else {
            return true;
        };
        for range in ranges.iter() {
            match range {
                Some((low, high)) if (*low..=*high).contains(&status) => return true,
                Some(_) => {}
                None => return false,
            }
        }
        false
    }
}

/// A `statsd`/`datadog` instance: a log handler that packs the request and queues it, when its status
/// is measured.
pub struct MetricLogger {
    queue: Arc<Queue>,
    filter: StatusFilter,
}

impl MetricLogger {
    /// The instance of plugin `name` sending to `sink`: queues with the same `key` are shared (an unchanged
    /// reload keeps its queue and connection). With `streams`, it also measures L4 sessions (Kong's
    /// stream subsystem runs its `log` there; the [`Format`] sees [`Sample::stream`]).
    pub fn build<F: Format>(
        ctx: &BuildCtx<'_>,
        (name, streams): (&'static str, bool),
        key: String,
        queue: QueueConfig,
        sink: impl FnOnce() -> MetricSink<F>,
        filter: StatusFilter,
    ) -> Result<Arc<dyn Plugin>, String> {
        let queue = ctx.state.log_queues().get_or_start(key, || {
            let sink = sink();
            let target = sink.target();
            Ok(Queue::start(name, target, queue, sink, runtime::handle()?))
        })?;
        let logger = MetricLogger { queue, filter };
        let registered = Registered::new(name, logger).log(MetricLogger::log);
        Ok(match streams {
            true => registered.stream_log(MetricLogger::stream_log).build(),
            false => registered.build(),
        })
    }

    fn stream_log(&self, session: &SessionRecord<'_>) {
        self.push(|| Sample::of_session(session));
    }

    fn log(&self, ctx: &RequestCtx<'_>, record: &LogRecord) {
        if self.filter.allows(record.status) {
            self.push(|| Sample::of(ctx, record));
        }
    }

    /// Queues a sample, unless the queue is full (then it is counted as refused, unpacked).
    fn push<'a>(&self, sample: impl FnOnce() -> Sample<'a>) {
        if self.queue.is_full() {
            self.queue.refuse();
            return;
        }
        self.queue.push(sample().pack());
    }
}
