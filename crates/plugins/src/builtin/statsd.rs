//! `statsd` (priority 11, log phase): sends Kong's per-request metrics to a StatsD server over UDP (or TCP
//! with `use_tcp`), e.g. `kong.service.<name>.request.count:1|c`, `…latency:<ms>|ms`, `…status.<code>:1|c`,
//! `…user.<consumer>.request.count:1|c`, or the same without the scope and with tags in one of four
//! `tag_style`s. The log phase only packs the request onto the logging queue; the lines are written and
//! sent from the `sluice-log` thread ([`super::statsd_lines`]), so a dead receiver never holds a worker.
//!
//! Config as Kong 3.x: `host`, `port`, `prefix`, `metrics` (name, stat_type, sample_rate and identifiers,
//! Kong's 13 defaults), `allow_status_codes`, `udp_packet_size`, `use_tcp`, `hostname_in_prefix`, the
//! `*_identifier_default`s, `tag_style`, `queue` and the deprecated `queue_size` / `flush_timeout` /
//! `retry_count`. `shdict_usage` is accepted and sends nothing (Sluice has no nginx shared dictionaries).

mod format;
#[cfg(test)]
mod tests;

use super::statsd_lines::{MetricLogger, MetricSink, StatusFilter, Transport};
use crate::logging::address;
use crate::logging::legacy::LegacyQueueFields;
use crate::logging::queue::{queue_schema, QueueConfig};
use crate::plugin::Plugin;
use crate::registry::{typed_config, BuildCtx, Builtin};
use format::{ConsumerId, MetricName, ServiceId, StatsdFormat, TagStyle, WorkspaceId};
use serde::Deserialize;
use serde_json::{json, Map, Value};
use sluice_model::schema::{Field, FieldError, Schema};
use std::sync::Arc;

const METRIC_NAMES: &[&str] = &[
    "kong_latency",
    "latency",
    "request_count",
    "request_per_user",
    "request_size",
    "response_size",
    "status_count",
    "status_count_per_user",
    "unique_users",
    "upstream_latency",
    "status_count_per_workspace",
    "status_count_per_user_per_route",
    "shdict_usage",
];
const STAT_TYPES: &[&str] = &["counter", "gauge", "histogram", "meter", "set", "timer"];
pub(super) const CONSUMER_IDENTIFIERS: &[&str] = &["consumer_id", "custom_id", "username"];
const SERVICE_IDENTIFIERS: &[&str] = &[
    "service_id",
    "service_name",
    "service_host",
    "service_name_or_host",
];
const WORKSPACE_IDENTIFIERS: &[&str] = &["workspace_id", "workspace_name"];
const TAG_STYLES: &[&str] = &["dogstatsd", "influxdb", "librato", "signalfx"];

/// The plugin's config, after schema validation.
#[derive(Debug, Deserialize)]
struct Config {
    host: String,
    port: u16,
    prefix: String,
    metrics: Vec<MetricConfig>,
    /// Ranges `low-high`; only statuses in one of them are measured (all when absent).
    allow_status_codes: Option<Vec<String>>,
    /// Bytes per UDP datagram when lines are packed (0: one line per datagram).
    udp_packet_size: f64,
    use_tcp: bool,
    /// `prefix.node.<hostname>` instead of `prefix` (not with `tag_style`).
    hostname_in_prefix: bool,
    consumer_identifier_default: ConsumerId,
    service_identifier_default: ServiceId,
    workspace_identifier_default: WorkspaceId,
    tag_style: Option<TagStyle>,
    #[serde(flatten)]
    legacy: LegacyQueueFields,
    queue: QueueConfig,
}

/// One entry of `metrics`.
#[derive(Debug, Deserialize)]
struct MetricConfig {
    name: MetricName,
    stat_type: String,
    /// Sent as `|@rate` when not 1 (Kong does not sample; it tells the server the rate).
    sample_rate: Option<f64>,
    consumer_identifier: Option<ConsumerId>,
    service_identifier: Option<ServiceId>,
    workspace_identifier: Option<WorkspaceId>,
}

/// Kong's default `metrics`: every metric, counters with rate 1, timers and the set without one.
fn default_metrics() -> Value {
    let metric = |name: &str, stat_type: &str| match stat_type {
        "counter" | "gauge" => json!({"name": name, "stat_type": stat_type, "sample_rate": 1}),
        _ => json!({"name": name, "stat_type": stat_type}),
    };
    Value::Array(vec![
        metric("request_count", "counter"),
        metric("latency", "timer"),
        metric("request_size", "counter"),
        metric("status_count", "counter"),
        metric("response_size", "counter"),
        metric("unique_users", "set"),
        metric("request_per_user", "counter"),
        metric("upstream_latency", "timer"),
        metric("kong_latency", "timer"),
        metric("status_count_per_user", "counter"),
        metric("status_count_per_workspace", "counter"),
        metric("status_count_per_user_per_route", "counter"),
        metric("shdict_usage", "gauge"),
    ])
}

fn metric_schema() -> Schema {
    Schema::new(vec![
        ("name", Field::string().required().one_of(METRIC_NAMES)),
        ("stat_type", Field::string().one_of(STAT_TYPES)),
        ("sample_rate", Field::number().gt(0.0)),
        (
            "consumer_identifier",
            Field::string().one_of(CONSUMER_IDENTIFIERS),
        ),
        (
            "service_identifier",
            Field::string().one_of(SERVICE_IDENTIFIERS),
        ),
        (
            "workspace_identifier",
            Field::string().one_of(WORKSPACE_IDENTIFIERS),
        ),
    ])
    .with_check(check_sample_rate)
}

/// Kong's conditional check on a metric: `stat_type` is needed, and counters and gauges need a
/// `sample_rate` (shared with datadog, whose metrics have the same rule).
pub(super) fn check_sample_rate(m: &Map<String, Value>) -> Result<(), Vec<FieldError>> {
    match m["stat_type"].as_str() {
        None => Err(vec![FieldError::new(
            "stat_type",
            "field required for entity check",
        )]),
        Some("counter" | "gauge") if m["sample_rate"].is_null() => Err(vec![
            FieldError::new("sample_rate", "required field missing"),
            FieldError::entity_check(
                "failed conditional validation given value of field 'stat_type'",
            ),
        ]),
        _ => Ok(()),
    }
}

fn schema() -> Schema {
    let range = |v: &Value| {
        let s = v.as_str().unwrap_or_default();
        let ok = s.split_once('-').is_some_and(|(a, b)| {
            [a, b]
                .iter()
                .all(|n| !n.is_empty() && n.bytes().all(|c| c.is_ascii_digit()))
        });
        ok.then_some(())
            .ok_or_else(|| format!("invalid value: {s}"))
    };
    let one_of = |names| Field::string().required().one_of(names);
    Schema::new(vec![
        ("host", address::host().default("localhost")),
        ("port", Field::integer().default(8125).between(0.0, 65535.0)),
        ("prefix", Field::string().default("kong")),
        (
            "metrics",
            Field::array(Field::record(metric_schema())).default(default_metrics()),
        ),
        (
            "allow_status_codes",
            Field::array(Field::string().check(range)),
        ),
        (
            "udp_packet_size",
            Field::number().default(0).between(0.0, 65507.0),
        ),
        ("use_tcp", Field::boolean().default(false)),
        ("hostname_in_prefix", Field::boolean().default(false)),
        (
            "consumer_identifier_default",
            one_of(CONSUMER_IDENTIFIERS).default("custom_id"),
        ),
        (
            "service_identifier_default",
            one_of(SERVICE_IDENTIFIERS).default("service_name_or_host"),
        ),
        (
            "workspace_identifier_default",
            one_of(WORKSPACE_IDENTIFIERS).default("workspace_id"),
        ),
        ("retry_count", Field::integer()),
        ("queue_size", Field::integer()),
        ("flush_timeout", Field::number()),
        ("tag_style", Field::string().one_of(TAG_STYLES)),
        ("queue", Field::record(queue_schema())),
    ])
}

pub fn builtin() -> Builtin {
    Builtin::new("statsd", 11, schema(), build)
}

/// A range as Kong's log handler reads it: the first `ddd-ddd` anywhere in the string (its regex is not
/// anchored), None when there is none (then Kong's handler fails for every status it reaches it with).
fn status_range(s: &str) -> Option<(u16, u16)> {
    let b = s.as_bytes();
    let digits = |at: usize| {
        b[at..at + 3]
            .iter()
            .all(u8::is_ascii_digit)
            .then(|| s[at..at + 3].parse::<u16>().ok())
            .flatten()
    };
    (0..b.len().saturating_sub(6)).find_map(|i| match (digits(i), b[i + 3], digits(i + 4)) {
        (Some(low), b'-', Some(high)) => Some((low, high)),
        _ => None,
    })
}

fn build(ctx: &BuildCtx<'_>, entity: &sluice_model::Plugin) -> Result<Arc<dyn Plugin>, String> {
    let config: Config = typed_config(entity)?;
    let filter = match &config.allow_status_codes {
        None => StatusFilter::all(),
        Some(ranges) => {
            let parsed: Vec<_> = ranges.iter().map(|r| status_range(r)).collect();
            if let Some(bad) = ranges.iter().find(|r| status_range(r).is_none()) {
                tracing::warn!("statsd: allow_status_codes '{bad}' has no three-digit range; statuses reaching it are not measured");
            }
            StatusFilter::ranges(parsed)
        }
    };
    let transport = match config.use_tcp {
        true => Transport::Tcp,
        false => Transport::Udp {
            packet_size: config.udp_packet_size,
        },
    };
    // Not on streams: Kong's statsd reads `request.size` of every record, which a stream record lacks,
    // so in Kong it fails on every session.
    MetricLogger::build(
        ctx,
        ("statsd", false),
        format!("statsd {}", entity.config),
        config.legacy.apply("statsd", &config.queue),
        || {
            let (host, port) = (config.host.clone(), config.port);
            MetricSink::new(StatsdFormat::new(&config), host, port, transport)
        },
        filter,
    )
}
