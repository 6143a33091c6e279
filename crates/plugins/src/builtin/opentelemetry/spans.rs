//! Kong's spans for one sampled request, as OTLP `Span`s: `kong` (server span: the whole request, with
//! Kong's `http.*`, `net.peer.ip` and `kong.request.id` attributes) and one `kong.balancer` (client span)
//! per upstream try, a failed try marked with its status code and an error status. The last try's span
//! carries the span id that was sent upstream, so the upstream's spans hang below it.

use super::proto::{InstrumentationScope, KeyValue, Resource, SpanHead, SpanWriter, Value};
use super::Traced;
use crate::ctx::{LogRecord, RequestCtx};
use crate::logging::json::ip_text;
use crate::tracing::context::new_span_id;
use crate::tracing::request::{host, http_version, unix_ns, upstream_host, wall};
use bytes::Bytes;
use prost::Message;
use std::collections::BTreeMap;
use std::time::SystemTime;

const SERVER: i32 = 2;
const CLIENT: i32 = 3;

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

/// The request's spans, encoded: the balancer tries first, then the root span (Kong's order at log time).
/// Each is written straight into its own buffer ([`SpanWriter`]) and handed to `push`.
pub fn spans(
    ctx: &RequestCtx<'_>,
    record: &LogRecord,
    traced: &Traced,
    mut push: impl FnMut(Bytes),
) {
    let end = unix_ns(SystemTime::now());
    let last = record.tries.len();
    for (i, attempt) in record.tries.iter().enumerate() {
        let start = wall(ctx, attempt.started);
        let reuses = i + 1 == last && attempt.failed.is_none();
        let id = if reuses {
            traced.balancer_span
        } else {
            new_span_id()
        };
        let mut s = SpanWriter::new(&SpanHead {
            trace_id: &traced.trace_id,
            span_id: &id,
            parent_span_id: &traced.root_span,
            name: "kong.balancer",
            kind: CLIENT,
            start_time_unix_nano: unix_ns(start),
            end_time_unix_nano: if reuses {
                end
            } else {
                unix_ns(start + attempt.latency)
            },
        });
        s.double("try_count", (i + 1) as f64);
        s.text_with("net.peer.ip", |out| ip_text(out, attempt.addr.ip()));
        s.double("net.peer.port", attempt.addr.port().into());
        if let Some(name) = upstream_host(ctx) {
            s.text("net.peer.name", name);
        }
        if let Some(code) = attempt.failed {
            s.int("http.status_code", code.into());
            s.error_status();
        }
        push(s.finish());
    }
    let req = &ctx.request;
    let host = host(ctx);
    let uri = req.uri.path_and_query().map_or("/", |pq| pq.as_str());
    let route_path = ctx.route.and_then(|r| r.paths.as_ref()?.first());
    let parent = traced.parent.as_ref().map_or(&[][..], |p| &p[..]);
    let mut root = SpanWriter::new(&SpanHead {
        trace_id: &traced.trace_id,
        span_id: &traced.root_span,
        parent_span_id: parent,
        name: "kong",
        kind: SERVER,
        start_time_unix_nano: unix_ns(ctx.started_wall),
        end_time_unix_nano: end,
    });
    root.text("http.method", req.method.as_str());
    root.text_with("http.url", |out| {
        for part in [ctx.scheme, "://", &host, uri] {
            out.extend_from_slice(part.as_bytes());
        }
    });
    root.text("http.host", &host);
    root.text("http.scheme", ctx.scheme);
    root.text("http.flavor", http_version(ctx));
    root.text_with("http.client_ip", |out| ip_text(out, ctx.client_ip));
    root.text_with("net.peer.ip", |out| ip_text(out, ctx.client_addr.ip()));
    root.text("kong.request.id", ctx.request_id);
    root.int("http.status_code", record.status.into());
    root.text("http.route", route_path.map_or("", String::as_str));
    push(root.finish());
}
