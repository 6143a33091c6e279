//! Kong's spans for one sampled request, as OTLP `Span`s: `kong` (server span: the whole request, with
//! Kong's `http.*`, `net.peer.ip` and `kong.request.id` attributes) and one `kong.balancer` (client span)
//! per upstream try, a failed try marked with its status code and an error status. The last try's span
//! carries the span id that was sent upstream, so the upstream's spans hang below it.

use super::proto::{InstrumentationScope, KeyValue, Resource, Span, Status, Value};
use super::Traced;
use crate::ctx::{LogRecord, RequestCtx};
use crate::logging::json::ip_string;
use crate::tracing::context::new_span_id;
use crate::tracing::request::{host, http_version, unix_ns, upstream_host, wall};
use prost::Message;
use std::collections::BTreeMap;
use std::time::SystemTime;

const SERVER: i32 = 2;
const CLIENT: i32 = 3;
const ERROR: i32 = 2;

/// The encoded `Resource` (`service.name: kong`, overridden or extended by `resource_attributes`) and
/// `InstrumentationScope` (`kong-internal` 0.1.0) every batch carries.
pub fn resource_and_scope(attributes: Option<&BTreeMap<String, String>>) -> (Vec<u8>, Vec<u8>) {
    let mut all = BTreeMap::from([("service.name".to_string(), "kong".to_string())]);
    all.extend(
        attributes
            .into_iter()
            .flatten()
            .map(|(k, v)| (k.clone(), v.clone())),
    );
    let attributes = all
        .iter()
        .map(|(k, v)| KeyValue::new(k, Value::String(v.clone())))
        .collect();
    let scope = InstrumentationScope {
        name: "kong-internal".into(),
        version: "0.1.0".into(),
    };
    (
        Resource { attributes }.encode_to_vec(),
        scope.encode_to_vec(),
    )
}

fn text(key: &str, value: impl Into<String>) -> KeyValue {
    KeyValue::new(key, Value::String(value.into()))
}

/// The request's spans: the balancer tries first, then the root span (Kong's order at log time).
pub fn spans(ctx: &RequestCtx<'_>, record: &LogRecord, traced: &Traced) -> Vec<Span> {
    let end = unix_ns(SystemTime::now());
    let span = |name: &str, kind: i32, id: [u8; 8], parent: Option<[u8; 8]>, start: u64| Span {
        trace_id: traced.trace_id.to_vec(),
        span_id: id.to_vec(),
        parent_span_id: parent.map(|p| p.to_vec()).unwrap_or_default(),
        name: name.to_string(),
        kind,
        start_time_unix_nano: start,
        end_time_unix_nano: end,
        ..Span::default()
    };
    let mut out = Vec::with_capacity(record.tries.len() + 1);
    let last = record.tries.len();
    for (i, attempt) in record.tries.iter().enumerate() {
        let start = wall(ctx, attempt.started);
        let reuses = i + 1 == last && attempt.failed.is_none();
        let id = if reuses {
            traced.balancer_span
        } else {
            new_span_id()
        };
        let mut s = span(
            "kong.balancer",
            CLIENT,
            id,
            Some(traced.root_span),
            unix_ns(start),
        );
        s.attributes = vec![
            KeyValue::new("try_count", Value::Double((i + 1) as f64)),
            text("net.peer.ip", ip_string(attempt.addr.ip())),
            KeyValue::new("net.peer.port", Value::Double(attempt.addr.port().into())),
        ];
        if let Some(name) = upstream_host(ctx) {
            s.attributes.push(text("net.peer.name", name));
        }
        if let Some(code) = attempt.failed {
            s.attributes
                .push(KeyValue::new("http.status_code", Value::Int(code.into())));
            s.status = Some(Status {
                message: String::new(),
                code: ERROR,
            });
        }
        if !reuses {
            s.end_time_unix_nano = unix_ns(start + attempt.latency);
        }
        out.push(s);
    }
    let req = &ctx.request;
    let host = host(ctx);
    let uri = req.uri.path_and_query().map_or("/", |pq| pq.as_str());
    let route_path = ctx.route.and_then(|r| r.paths.as_ref()?.first().cloned());
    let mut root = span(
        "kong",
        SERVER,
        traced.root_span,
        traced.parent,
        unix_ns(ctx.started_wall),
    );
    root.attributes = vec![
        text("http.method", req.method.as_str()),
        text("http.url", format!("{}://{host}{uri}", ctx.scheme)),
        text("http.host", host.as_ref()),
        text("http.scheme", ctx.scheme),
        text("http.flavor", http_version(ctx)),
        text("http.client_ip", ip_string(ctx.client_ip)),
        text("net.peer.ip", ip_string(ctx.client_addr.ip())),
        text("kong.request.id", ctx.request_id),
        KeyValue::new("http.status_code", Value::Int(record.status.into())),
        text("http.route", route_path.unwrap_or_default()),
    ];
    out.push(root);
    out
}
