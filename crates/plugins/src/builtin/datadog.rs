//! `datadog` (priority 10, log phase): sends Kong's per-request metrics to a Datadog agent in DogStatsD
//! format over UDP, one datagram per metric: `kong.request.count:1|c|#name:<service>,status:200,
//! consumer:<id>,app:kong`. The service tag is the service's name (or host) with dots as underscores
//! (empty without a service), the consumer tag is present when the metric's `consumer_identifier` names a
//! consumer (ids with dashes as underscores), then the metric's own `tags`. The log phase only packs the
//! request onto the logging queue; lines are written and sent from the `sluice-log` thread
//! ([`super::statsd_lines`]).
//!
//! Config as Kong 3.x: `host`, `port`, `prefix`, `service_name_tag`, `status_tag`, `consumer_tag`,
//! `metrics` (name, stat_type incl. `distribution`, tags, sample_rate in [0, 1], consumer_identifier),
//! `queue` and the deprecated `queue_size` / `flush_timeout` / `retry_count`.
//!
//! On L4 streams (Kong's stream subsystem) a session gives `request.count` and `kong_latency`, tagged
//! `status:-`, the only metrics of Kong's that a stream record carries.

#[cfg(test)]
mod tests;

use super::statsd::{check_sample_rate, CONSUMER_IDENTIFIERS};
use super::statsd_lines::{
    consumer_value, stat_suffix, write_head, write_value, ConsumerId, Format, Lines, MetricLogger,
    MetricSink, Sample, StatusFilter, Transport, Value,
};
use crate::logging::address;
use crate::logging::legacy::LegacyQueueFields;
use crate::logging::queue::{queue_schema, QueueConfig};
use crate::plugin::Plugin;
use crate::registry::{typed_config, BuildCtx, Builtin};
use serde::Deserialize;
use serde_json::json;
use sluice_model::schema::{Field, Schema};
use std::sync::Arc;

const STAT_NAMES: &[&str] = &[
    "kong_latency",
    "latency",
    "request_count",
    "request_size",
    "response_size",
    "upstream_latency",
];
const STAT_TYPES: &[&str] = &[
    "counter",
    "gauge",
    "histogram",
    "meter",
    "set",
    "timer",
    "distribution",
];

#[derive(Debug, Deserialize)]
struct Config {
    host: String,
    port: u16,
    prefix: String,
    service_name_tag: String,
    status_tag: String,
    consumer_tag: String,
    #[serde(flatten)]
    legacy: LegacyQueueFields,
    queue: QueueConfig,
    metrics: Vec<MetricConfig>,
}

#[derive(Debug, Deserialize)]
struct MetricConfig {
    name: String,
    stat_type: String,
    /// Extra tags, `key:value` or `key`, appended after the plugin's own.
    tags: Option<Vec<String>>,
    sample_rate: Option<f64>,
    consumer_identifier: Option<ConsumerId>,
}

fn metric_schema() -> Schema {
    let tag = |v: &serde_json::Value| {
        let s = v.as_str().unwrap_or_default();
        match s.is_empty() || s.ends_with(':') {
            true => Err(format!("invalid value: {s}")),
            false => Ok(()),
        }
    };
    Schema::new(vec![
        ("name", Field::string().required().one_of(STAT_NAMES)),
        ("stat_type", Field::string().one_of(STAT_TYPES)),
        ("tags", Field::array(Field::string().check(tag))),
        ("sample_rate", Field::number().between(0.0, 1.0)),
        (
            "consumer_identifier",
            Field::string().one_of(CONSUMER_IDENTIFIERS),
        ),
    ])
    .with_check(check_sample_rate)
}

/// Kong's default `metrics`: the six metrics, tagged `app:kong`, consumers by `custom_id`.
fn default_metrics() -> serde_json::Value {
    let metric = |name: &str, stat_type: &str| {
        let mut m = json!({"name": name, "stat_type": stat_type, "tags": ["app:kong"],
            "consumer_identifier": "custom_id"});
        if stat_type == "counter" {
            m["sample_rate"] = json!(1);
        }
        m
    };
    json!([
        metric("request_count", "counter"),
        metric("latency", "timer"),
        metric("request_size", "timer"),
        metric("response_size", "timer"),
        metric("upstream_latency", "timer"),
        metric("kong_latency", "timer"),
    ])
}

fn schema() -> Schema {
    Schema::new(vec![
        ("host", address::host().default("localhost")),
        ("port", Field::integer().default(8125).between(0.0, 65535.0)),
        ("prefix", Field::string().default("kong")),
        ("service_name_tag", Field::string().default("name")),
        ("status_tag", Field::string().default("status")),
        ("consumer_tag", Field::string().default("consumer")),
        ("retry_count", Field::integer()),
        ("queue_size", Field::integer()),
        ("flush_timeout", Field::number()),
        ("queue", Field::record(queue_schema())),
        (
            "metrics",
            Field::array(Field::record(metric_schema()))
                .required()
                .default(default_metrics()),
        ),
    ])
}

pub fn builtin() -> Builtin {
    Builtin::new("datadog", 10, schema(), build)
}

/// One configured metric, ready to write.
struct Metric {
    /// Kong's metric name (`request_count`, ...).
    name: &'static str,
    suffix: &'static str,
    rate: Option<f64>,
    consumer: Option<ConsumerId>,
    tags: Vec<String>,
}

struct DatadogFormat {
    prefix: String,
    service_name_tag: String,
    status_tag: String,
    consumer_tag: String,
    metrics: Vec<Metric>,
}

/// A metric's stat name and its value for a request (datadog sends -1 for a request not proxied).
fn stat(name: &str, s: &Sample<'_>) -> (&'static str, i64) {
    match name {
        "request_count" => ("request.count", 1),
        "request_size" => ("request.size", s.request_size as i64),
        "response_size" => ("response.size", s.response_size as i64),
        "latency" => ("latency", s.latency as i64),
        "upstream_latency" => ("upstream_latency", s.upstream_latency),
        _ => ("kong_latency", s.kong_latency as i64),
    }
}

impl Format for DatadogFormat {
    fn write(&self, s: &Sample<'_>, lines: &mut Lines) {
        let service = s.service.as_ref().map_or(String::new(), |svc| {
            svc.name.unwrap_or(svc.host).replace('.', "_")
        });
        let mut status = itoa::Buffer::new();
        // A stream record has no `response`: Kong tags its status `-`.
        let status = match s.stream {
            true => "-",
            false => status.format(s.status),
        };
        for m in &self.metrics {
            // Nor a request latency, sizes or upstream latency: Kong writes those as `nil`, which no
            // agent reads; Sluice leaves them out.
            if s.stream && !matches!(m.name, "request_count" | "kong_latency") {
                continue;
            }
            let (stat_name, value) = stat(m.name, s);
            let mut buf = uuid::Uuid::encode_buffer();
            let consumer = m
                .consumer
                .and_then(|which| consumer_value(s.consumer.as_ref(), which, &mut buf))
                .map(|c| match m.consumer {
                    Some(ConsumerId::Id) => c.replace('-', "_"),
                    _ => c.to_string(),
                });
            lines.push(|out| {
                write_head(out, &self.prefix, &[stat_name]);
                write_value(out, Value::Int(value), m.suffix, m.rate);
                let mut tag = |parts: &[&str], first: bool| {
                    out.extend_from_slice(if first { b"|#" } else { b"," });
                    parts
                        .iter()
                        .for_each(|p| out.extend_from_slice(p.as_bytes()));
                };
                tag(&[&self.service_name_tag, ":", &service], true);
                tag(&[&self.status_tag, ":", status], false);
                if let Some(c) = &consumer {
                    tag(&[&self.consumer_tag, ":", c], false);
                }
                for t in &m.tags {
                    tag(&[t], false);
                }
            });
        }
    }
}

impl DatadogFormat {
    fn new(config: &Config) -> DatadogFormat {
        let metrics = config
            .metrics
            .iter()
            .map(|m| Metric {
                name: STAT_NAMES
                    .iter()
                    .find(|n| **n == m.name)
                    .copied()
                    .unwrap_or("kong_latency"),
                suffix: stat_suffix(&m.stat_type),
                rate: m.sample_rate,
                consumer: m.consumer_identifier,
                tags: m.tags.clone().unwrap_or_default(),
            })
            .collect();
        DatadogFormat {
            prefix: config.prefix.clone(),
            service_name_tag: config.service_name_tag.clone(),
            status_tag: config.status_tag.clone(),
            consumer_tag: config.consumer_tag.clone(),
            metrics,
        }
    }
}

fn build(ctx: &BuildCtx<'_>, entity: &sluice_model::Plugin) -> Result<Arc<dyn Plugin>, String> {
    let config: Config = typed_config(entity)?;
    let transport = Transport::Udp { packet_size: 0.0 };
    MetricLogger::build(
        ctx,
        ("datadog", true),
        format!("datadog {}", entity.config),
        config.legacy.apply("datadog", &config.queue),
        || {
            MetricSink::new(
                DatadogFormat::new(&config),
                config.host.clone(),
                config.port,
                transport,
            )
        },
        StatusFilter::all(),
    )
}
