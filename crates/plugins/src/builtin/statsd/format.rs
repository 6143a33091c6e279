//! statsd's lines for one request, as Kong's statsd log handler builds them (run on the `sluice-log`
//! thread). Without `tag_style` every metric is scoped: `prefix.service.<id>.<stat>` (dots in the service
//! identifier become `_`; `unnamed` when it has none) or `prefix.global.unmatched.<stat>` without a
//! service. With a `tag_style`, only the six plain metrics are sent, named `prefix.<stat>` and tagged with
//! service, route, workspace, consumer, node and status (no tags without a service identifier), and the
//! per-user, per-status and per-workspace metrics are skipped, as in Kong.

use super::super::statsd_lines::{
    consumer_value, node_name, stat_suffix, write_head, write_value, Format, Lines, Sample,
    ServiceRef, Value,
};
use super::Config;
pub use crate::builtin::statsd_lines::ConsumerId;
use crate::logging::serialize::DEFAULT_WORKSPACE_ID;
use serde::Deserialize;
use std::borrow::Cow;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MetricName {
    KongLatency,
    Latency,
    RequestCount,
    RequestPerUser,
    RequestSize,
    ResponseSize,
    StatusCount,
    StatusCountPerUser,
    UniqueUsers,
    UpstreamLatency,
    StatusCountPerWorkspace,
    StatusCountPerUserPerRoute,
    ShdictUsage,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum ServiceId {
    #[serde(rename = "service_id")]
    Id,
    #[serde(rename = "service_name")]
    Name,
    #[serde(rename = "service_host")]
    Host,
    #[serde(rename = "service_name_or_host")]
    NameOrHost,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum WorkspaceId {
    #[serde(rename = "workspace_id")]
    Id,
    #[serde(rename = "workspace_name")]
    Name,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TagStyle {
    Dogstatsd,
    Influxdb,
    Librato,
    Signalfx,
}

/// One configured metric, its identifiers resolved against the `*_identifier_default`s.
struct Metric {
    name: MetricName,
    suffix: &'static str,
    rate: Option<f64>,
    consumer: ConsumerId,
    service: ServiceId,
    workspace: WorkspaceId,
    /// The constant parts of the metric's common lines, written once here instead of piece by piece for
    /// every line of every request (a line is then its head, one fragment, maybe a number, one fragment).
    fragments: Fragments,
}

/// See [`Metric::fragments`].
struct Fragments {
    /// `.<stat>:` of a metric whose value is one of the request's numbers (empty for the others).
    stat: Box<[u8]>,
    /// `|<type>` and the rate (`|@0.5`) after such a value.
    value_tail: Box<[u8]>,
    /// `:1|c` and the rate, ending a count line (`status.<code>`).
    count_tail: Box<[u8]>,
}

impl Fragments {
    fn new(name: MetricName, suffix: &str, rate: Option<f64>) -> Fragments {
        let tail = |value: &str, kind: &str| {
            let mut out = Vec::new();
            write_value(&mut out, Value::Text(value), kind, rate);
            out.into_boxed_slice()
        };
        Fragments {
            stat: stat_name(name)
                .map(|stat| format!(".{stat}:").into_bytes().into())
                .unwrap_or_default(),
            // `write_value` starts with the `:` of an empty value; the tail goes after the number.
            value_tail: tail("", suffix)[1..].into(),
            count_tail: tail("1", "c"),
        }
    }
}

pub struct StatsdFormat {
    /// `prefix`, with `.node.<hostname>` when `hostname_in_prefix` and no `tag_style`.
    prefix: String,
    tag_style: Option<TagStyle>,
    /// The `node` tag: the host name with dots as underscores.
    node: String,
    metrics: Vec<Metric>,
}

impl StatsdFormat {
    pub(super) fn new(config: &Config) -> StatsdFormat {
        let node = node_name();
        let prefix = match (config.hostname_in_prefix, config.tag_style) {
            (true, None) => format!("{}.node.{node}", config.prefix),
            _ => config.prefix.clone(),
        };
        let metrics = config
            .metrics
            .iter()
            .map(|m| Metric {
                name: m.name,
                suffix: stat_suffix(&m.stat_type),
                rate: m.sample_rate,
                fragments: Fragments::new(m.name, stat_suffix(&m.stat_type), m.sample_rate),
                consumer: m
                    .consumer_identifier
                    .unwrap_or(config.consumer_identifier_default),
                service: m
                    .service_identifier
                    .unwrap_or(config.service_identifier_default),
                workspace: m
                    .workspace_identifier
                    .unwrap_or(config.workspace_identifier_default),
            })
            .collect();
        StatsdFormat {
            prefix,
            tag_style: config.tag_style,
            node,
            metrics,
        }
    }
}

/// The metrics whose value is one of the request's numbers: their stat name and value (None when the
/// value is -1, i.e. not proxied, which Kong leaves out).
fn plain(name: MetricName, s: &Sample<'_>) -> Option<(&'static str, i64)> {
    let value = match name {
        MetricName::RequestCount => 1,
        MetricName::RequestSize => s.request_size as i64,
        MetricName::ResponseSize => s.response_size as i64,
        MetricName::Latency => s.latency as i64,
        MetricName::UpstreamLatency => s.upstream_latency,
        MetricName::KongLatency => s.kong_latency as i64,
        _ => return None,
    };
    (value != -1).then_some((stat_name(name)?, value))
}

/// The stat name of a metric whose value is one of the request's numbers.
fn stat_name(name: MetricName) -> Option<&'static str> {
    Some(match name {
        MetricName::RequestCount => "request.count",
        MetricName::RequestSize => "request.size",
        MetricName::ResponseSize => "response.size",
        MetricName::Latency => "latency",
        MetricName::UpstreamLatency => "upstream_latency",
        MetricName::KongLatency => "kong_latency",
        _ => return None,
    })
}

fn service_value<'a>(
    service: &ServiceRef<'a>,
    which: ServiceId,
    buf: &'a mut [u8; 45],
) -> Option<&'a str> {
    match which {
        ServiceId::Id => Some(service.id.hyphenated().encode_lower(buf)),
        ServiceId::Name => service.name,
        ServiceId::Host => Some(service.host),
        ServiceId::NameOrHost => Some(service.name.unwrap_or(service.host)),
    }
}

fn workspace_value(which: WorkspaceId) -> &'static str {
    match which {
        WorkspaceId::Id => DEFAULT_WORKSPACE_ID,
        WorkspaceId::Name => "default",
    }
}

impl Format for StatsdFormat {
    fn write(&self, s: &Sample<'_>, lines: &mut Lines) {
        let Some(style) = self.tag_style else {
            let mut status = itoa::Buffer::new();
            let mut heads = ScopeHeads::default();
            let status = status.format(s.status);
            for m in &self.metrics {
                let head = heads.get(&self.prefix, s, m.service);
                self.scoped(m, s, head, status, lines);
            }
            return;
        };
        for m in &self.metrics {
            self.tagged(style, m, s, lines);
        }
    }
}

/// `prefix.service.<identifier>` (or `prefix.global.unmatched`) per service identifier, written once per
/// sample: every scoped line of a request starts with it.
#[derive(Default)]
struct ScopeHeads([Option<String>; 4]);

impl ScopeHeads {
    fn get(&mut self, prefix: &str, s: &Sample<'_>, which: ServiceId) -> &str {
        let slot = &mut self.0[which as usize];
        slot.get_or_insert_with(|| {
            let mut service_buf = uuid::Uuid::encode_buffer();
            let [a, b]: [Cow<'_, str>; 2] = match &s.service {
                Some(service) => {
                    let id = service_value(service, which, &mut service_buf).unwrap_or("unnamed");
                    ["service".into(), underscored(id)]
                }
                None => ["global".into(), "unmatched".into()],
            };
            [prefix, ".", &a, ".", &b].concat()
        })
    }
}

impl StatsdFormat {
    /// The scoped line of metric `m`; `head` is `prefix.<scope>` for the metric's service identifier.
    fn scoped(&self, m: &Metric, s: &Sample<'_>, head: &str, status: &str, lines: &mut Lines) {
        let mut consumer_buf = uuid::Uuid::encode_buffer();
        let consumer = consumer_value(s.consumer.as_ref(), m.consumer, &mut consumer_buf);
        let (one, rate) = (Value::Int(1), m.rate);
        let f = &m.fragments;
        match (m.name, consumer) {
            (MetricName::StatusCount, _) => lines.push(|out| {
                out.extend_from_slice(head.as_bytes());
                out.extend_from_slice(b".status.");
                out.extend_from_slice(status.as_bytes());
                out.extend_from_slice(&f.count_tail);
            }),
            (MetricName::UniqueUsers, Some(c)) => {
                lines.metric(head, &["user", "uniques"], Value::Text(c), "s", None)
            }
            (MetricName::RequestPerUser, Some(c)) => {
                lines.metric(head, &["user", c, "request", "count"], one, "c", rate)
            }
            (MetricName::StatusCountPerUser, Some(c)) => {
                lines.metric(head, &["user", c, "status", status], one, "c", rate)
            }
            (MetricName::StatusCountPerWorkspace, _) => {
                let ws = workspace_value(m.workspace);
                lines.metric(head, &["workspace", ws, "status", status], one, "c", rate)
            }
            (MetricName::StatusCountPerUserPerRoute, Some(c)) => {
                if let Some(route) = &s.route {
                    let mut route_buf = uuid::Uuid::encode_buffer();
                    let id = route.id.hyphenated().encode_lower(&mut route_buf);
                    lines.metric(
                        &self.prefix,
                        &["route", id, "user", c, "status", status],
                        one,
                        "c",
                        rate,
                    )
                }
            }
            (name, _) => {
                if let Some((_, value)) = plain(name, s) {
                    lines.push(|out| {
                        out.extend_from_slice(head.as_bytes());
                        out.extend_from_slice(&f.stat);
                        out.extend_from_slice(itoa::Buffer::new().format(value).as_bytes());
                        out.extend_from_slice(&f.value_tail);
                    })
                }
            }
        }
    }

    fn tagged(&self, style: TagStyle, m: &Metric, s: &Sample<'_>, lines: &mut Lines) {
        let Some((stat, value)) = plain(m.name, s) else {
            return;
        };
        let mut service_buf = uuid::Uuid::encode_buffer();
        let mut consumer_buf = uuid::Uuid::encode_buffer();
        let mut route_buf = uuid::Uuid::encode_buffer();
        let mut status = itoa::Buffer::new();
        let service = s
            .service
            .as_ref()
            .and_then(|svc| service_value(svc, m.service, &mut service_buf));
        let tags: Option<Vec<(&str, &str)>> = service.map(|service| {
            let mut tags = vec![("service", service)];
            if let Some(r) = &s.route {
                let route = r
                    .name
                    .unwrap_or_else(|| r.id.hyphenated().encode_lower(&mut route_buf));
                tags.push(("route", route));
            }
            tags.push(("workspace", workspace_value(m.workspace)));
            if let Some(c) = consumer_value(s.consumer.as_ref(), m.consumer, &mut consumer_buf) {
                tags.push(("consumer", c));
            }
            tags.push(("node", self.node.as_str()));
            tags.push(("status", status.format(s.status)));
            tags
        });
        let Some(tags) = tags else {
            return lines.metric(&self.prefix, &[stat], Value::Int(value), m.suffix, m.rate);
        };
        let (open, sep, close) = match style {
            TagStyle::Dogstatsd => ("|#", b':', ""),
            TagStyle::Influxdb => (",", b'=', ""),
            TagStyle::Librato => ("#", b'=', ""),
            TagStyle::Signalfx => ("[", b'=', "]"),
        };
        let write_tags = |out: &mut Vec<u8>| {
            out.extend_from_slice(open.as_bytes());
            for (i, (k, v)) in tags.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                out.extend_from_slice(k.as_bytes());
                out.push(sep);
                out.extend_from_slice(v.as_bytes());
            }
            out.extend_from_slice(close.as_bytes());
        };
        lines.push(|out| {
            write_head(out, &self.prefix, &[stat]);
            // DogStatsD puts the tags after the value, the others after the name.
            if style == TagStyle::Dogstatsd {
                write_value(out, Value::Int(value), m.suffix, m.rate);
                write_tags(out);
            } else {
                write_tags(out);
                write_value(out, Value::Int(value), m.suffix, m.rate);
            }
        });
    }
}

/// Kong replaces dots in the service's identifier with underscores in scoped names.
fn underscored(s: &str) -> Cow<'_, str> {
    match s.contains('.') {
        true => Cow::Owned(s.replace('.', "_")),
        false => Cow::Borrowed(s),
    }
}
