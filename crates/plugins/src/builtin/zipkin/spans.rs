//! Kong's Zipkin span layout for one sampled request, as Zipkin v2 JSON objects (one per span, in the
//! order Kong reports them: balancer tries, proxy, request):
//! - request span: `SERVER`, from the request's start to its end, tagged `lc`, `http.method`, `http.host`,
//!   `http.path`, `http.protocol`, the static tags, the `tags_header` tags, `http.status_code`,
//!   `kong.consumer`, `kong.credential`; remote endpoint the client;
//! - `<name> (proxy)`: `CLIENT`, child of the request span, from access to the end, tagged with the
//!   service and route and `peer.hostname`; remote endpoint the last upstream target; phase annotations
//!   (`kas`, `kaf`, `khs`, `khf`, `kbs`, `kbf`) or, with `phase_duration_flavor: tags`, durations;
//! - `<name> (balancer try N)`: `CLIENT`, child of the request span, one per try, failed ones tagged
//!   `error`, `kong.balancer.state` and `http.status_code`.

use super::{Config, Traced};
use crate::ctx::{LogRecord, RequestCtx, TryRecord};
use crate::tracing::context::new_span_id;
use crate::tracing::hex::to_hex;
use crate::tracing::request::{host, http_version, upstream_host, wall};
use serde::Serialize;
use sluice_model::{Route, Service};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Span<'a> {
    pub trace_id: &'a str,
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent_id: Option<String>,
    pub id: String,
    pub kind: &'static str,
    pub timestamp: u64,
    pub duration: u64,
    pub local_endpoint: Local<'a>,
    /// `null` when the span knows neither a port nor a service name (as Kong sends it).
    pub remote_endpoint: Option<Remote<'a>>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub tags: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub annotations: Vec<Annotation>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Local<'a> {
    pub service_name: &'a str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Remote<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    service_name: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    port: Option<u16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    ipv4: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    ipv6: Option<String>,
}

#[derive(Serialize)]
pub(super) struct Annotation {
    pub value: &'static str,
    pub timestamp: u64,
}

impl Annotation {
    /// The annotation `value` at `when`.
    pub fn at(value: &'static str, when: SystemTime) -> Annotation {
        Annotation {
            value,
            timestamp: micros(when),
        }
    }
}

pub(super) fn micros(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

/// Kong's remote endpoint: the service name (or `default_service_name`) and the peer's address.
pub(super) fn remote<'a>(service: Option<&'a str>, addr: Option<SocketAddr>) -> Option<Remote<'a>> {
    if service.is_none() && addr.is_none() {
        return None;
    }
    let ip = addr.map(|a| a.ip());
    Some(Remote {
        service_name: service,
        port: addr.map(|a| a.port()),
        ipv4: ip.filter(|i| i.is_ipv4()).map(|i| i.to_string()),
        ipv6: ip.filter(|i| i.is_ipv6()).map(|i| i.to_string()),
    })
}

/// `Zipkin-Tags: name=value; other=value` (several headers add up; malformed items are skipped).
fn header_tags(ctx: &RequestCtx<'_>, header: &str, tags: &mut BTreeMap<String, String>) {
    for value in ctx.request.headers.get_all(header) {
        for item in value.to_str().unwrap_or_default().split(';') {
            let Some((name, value)) = item.split_once('=') else {
                continue;
            };
            let (name, value) = (name.trim(), value.trim());
            if !name.is_empty() && !name.contains(char::is_whitespace) && !value.is_empty() {
                tags.insert(name.to_string(), value.to_string());
            }
        }
    }
}

/// The service and route tags every child span carries.
pub(super) fn service_route_tags(
    service: Option<&Service>,
    route: Option<&Route>,
    tags: &mut BTreeMap<String, String>,
) {
    if let Some(service) = service {
        tags.insert("kong.service".into(), service.id.to_string());
        if let Some(name) = &service.name {
            tags.insert("kong.service_name".into(), name.clone());
        }
    }
    if let Some(route) = route {
        tags.insert("kong.route".into(), route.id.to_string());
        if let Some(name) = &route.name {
            tags.insert("kong.route_name".into(), name.clone());
        }
    }
}

/// Makes the spans of one trace.
pub(super) struct Trace<'a> {
    pub trace_id: String,
    pub config: &'a Config,
}

impl Trace<'_> {
    /// A span from `from` to `to`, with no remote endpoint, tags or annotations yet.
    pub fn span(
        &self,
        (name, kind): (String, &'static str),
        id: [u8; 8],
        parent: Option<[u8; 8]>,
        from: SystemTime,
        to: SystemTime,
    ) -> Span<'_> {
        Span {
            trace_id: &self.trace_id,
            name,
            parent_id: parent.map(|p| to_hex(&p)),
            id: to_hex(&id),
            kind,
            timestamp: micros(from),
            duration: micros(to).saturating_sub(micros(from)),
            local_endpoint: Local {
                service_name: &self.config.local_service_name,
            },
            remote_endpoint: None,
            tags: BTreeMap::new(),
            annotations: Vec::new(),
        }
    }

    /// `<name> (balancer try N)`, a `CLIENT` child of `parent` per try; all but the last failed.
    pub fn balancer_tries<'s>(
        &'s self,
        (name, parent): (&str, [u8; 8]),
        tries: &[TryRecord],
        wall: impl Fn(Instant) -> SystemTime,
        (service, route): (Option<&'s Service>, Option<&Route>),
        out: &mut Vec<Span<'s>>,
    ) {
        let remote_service = service
            .and_then(|s| s.name.as_deref())
            .or(self.config.default_service_name.as_deref());
        for (i, attempt) in tries.iter().enumerate() {
            let from = wall(attempt.started);
            let label = format!("{name} (balancer try {})", i + 1);
            let to = from + attempt.latency;
            let mut s = self.span((label, "CLIENT"), new_span_id(), Some(parent), from, to);
            s.remote_endpoint = remote(remote_service, Some(attempt.addr));
            s.tags
                .insert("kong.balancer.try".into(), (i + 1).to_string());
            if i + 1 < tries.len() {
                s.tags.insert("error".into(), "true".into());
                s.tags.insert("kong.balancer.state".into(), "failed".into());
                if let Some(code) = attempt.failed {
                    s.tags.insert("http.status_code".into(), code.to_string());
                }
            }
            service_route_tags(service, route, &mut s.tags);
            out.push(s);
        }
    }
}

/// Serializes spans, one JSON object each.
pub(super) fn serialized(spans: Vec<Span<'_>>) -> Vec<Vec<u8>> {
    spans
        .into_iter()
        .filter_map(|s| serde_json::to_vec(&s).ok())
        .collect()
}

/// The request's spans, each serialized as one JSON object.
pub fn spans(
    ctx: &RequestCtx<'_>,
    record: &LogRecord,
    t: &Traced,
    config: &Config,
) -> Vec<Vec<u8>> {
    let now = SystemTime::now();
    let trace = Trace {
        trace_id: to_hex(&t.trace_id[16 - t.trace_len..]),
        config,
    };
    let req = &ctx.request;
    let method = req.method.as_str();
    let name = match config.http_span_name.as_str() {
        "method_path" => format!("{method} {}", req.uri.path()),
        _ => method.to_string(),
    };
    let service_name = ctx.service.and_then(|s| s.name.as_deref());
    let default_service = config.default_service_name.as_deref();
    let start = ctx.started_wall;
    let mut out = Vec::with_capacity(record.tries.len() + 2);
    let tries: Vec<_> = record.tries.iter().copied().collect();
    trace.balancer_tries(
        (&name, t.request_span),
        &tries,
        |at| wall(ctx, at),
        (ctx.service, ctx.route),
        &mut out,
    );

    let access_start = wall(ctx, t.access_start);
    let mut proxy = trace.span(
        (format!("{name} (proxy)"), "CLIENT"),
        t.proxy_span,
        Some(t.request_span),
        access_start,
        now,
    );
    let last = tries.last().map(|t| t.addr);
    proxy.remote_endpoint = remote(service_name.or(default_service), last);
    if last.is_some() {
        if let Some(host) = upstream_host(ctx) {
            proxy.tags.insert("peer.hostname".into(), host.to_string());
        }
    }
    service_route_tags(ctx.service, ctx.route, &mut proxy.tags);
    let access_end = start + Duration::from_millis(record.kong_latency_ms);
    let upstream = record.upstream_latency_ms.unwrap_or(0);
    let header_start = access_end + Duration::from_millis(upstream);
    let mut request = trace.span((name, "SERVER"), t.request_span, t.parent, start, now);
    if config.phase_duration_flavor == "annotations" {
        let at = Annotation::at;
        proxy.annotations = vec![
            at("khs", header_start),
            at("khf", now),
            at("kbs", now),
            at("kas", access_start),
            at("kaf", access_end.max(access_start)),
            at("kbf", now),
        ];
        request.annotations = vec![at("krs", start)];
    } else {
        let access_ms = micros(access_end).saturating_sub(micros(access_start)) / 1000;
        proxy
            .tags
            .insert("kong.access.duration_ms".into(), access_ms.to_string());
    }
    out.push(proxy);

    let client = SocketAddr::new(ctx.client_ip, ctx.client_addr.port());
    request.remote_endpoint = remote(default_service, Some(client));
    let tags = &mut request.tags;
    tags.insert("lc".into(), "kong".into());
    tags.insert("http.method".into(), method.into());
    tags.insert("http.host".into(), host(ctx).into_owned());
    tags.insert("http.path".into(), req.uri.path().into());
    tags.insert(
        "http.protocol".into(),
        format!("HTTP/{}", http_version(ctx).trim_end_matches(".0")),
    );
    for tag in config.static_tags.iter().flatten() {
        tags.insert(tag.name.clone(), tag.value.clone());
    }
    header_tags(ctx, &config.tags_header, tags);
    tags.insert("http.status_code".into(), record.status.to_string());
    if let Some(consumer) = ctx.consumer {
        tags.insert("kong.consumer".into(), consumer.id.to_string());
    }
    if let (true, Some(credential)) = (config.include_credential, ctx.credential) {
        tags.insert("kong.credential".into(), credential.id.to_string());
    }
    tags.retain(|_, v| !v.is_empty());
    out.push(request);
    serialized(out)
}
