//! Kong's Zipkin spans for one finished L4 session (its stream subsystem), in the order Kong reports
//! them:
//! - `stream (balancer try N)`: as for requests ([`Trace::balancer_tries`]);
//! - `stream (proxy)`: `CLIENT`, child of the session span, from the session's start to its end, tagged
//!   with the service and route and `peer.hostname`; remote endpoint the last target; annotations `kps`
//!   and `kpf` (the preread phase: until a target was picked) or, with `phase_duration_flavor: tags`,
//!   `kong.preread.duration_ms`;
//! - `stream`: `SERVER`, the whole session, tagged `lc: kong` and the static tags; remote endpoint the
//!   client.
//!
//! A stream carries no trace context, so every session starts a trace of its own (the caller samples it).

use super::spans::{remote, serialized, service_route_tags, Annotation, Trace};
use super::Config;
use crate::stream::SessionRecord;
use crate::tracing::context::new_span_id;
use crate::tracing::hex::to_hex;
use std::time::{Duration, SystemTime};

/// The session's spans, each serialized as one JSON object.
pub fn spans(session: &SessionRecord<'_>, config: &Config) -> Vec<Vec<u8>> {
    let now = SystemTime::now();
    let trace_id: [u8; 16] = rand::random();
    let len = config.traceid_byte_count.min(16);
    let trace = Trace {
        trace_id: to_hex(&trace_id[16 - len..]),
        config,
    };
    let (request_id, proxy_id) = (new_span_id(), new_span_id());
    let start = session.started_wall;
    let mut out = Vec::with_capacity(session.tries.len() + 2);
    trace.balancer_tries(
        ("stream", request_id),
        &session.tries,
        |at| start + at.saturating_duration_since(session.started),
        (session.service, session.route),
        &mut out,
    );

    let mut proxy = trace.span(
        ("stream (proxy)".into(), "CLIENT"),
        proxy_id,
        Some(request_id),
        start,
        now,
    );
    let service_name = session.service.and_then(|s| s.name.as_deref());
    let remote_service = service_name.or(config.default_service_name.as_deref());
    let last = session.tries.last().map(|t| t.addr);
    proxy.remote_endpoint = remote(remote_service, last);
    if let (Some(_), Some(service)) = (last, session.service) {
        proxy
            .tags
            .insert("peer.hostname".into(), service.host.clone());
    }
    service_route_tags(session.service, session.route, &mut proxy.tags);
    let preread_end = start + Duration::from_millis(session.kong_latency_ms);
    match config.phase_duration_flavor.as_str() {
        "annotations" => {
            proxy.annotations = vec![
                Annotation::at("kps", start),
                Annotation::at("kpf", preread_end.min(now)),
            ];
        }
        _ => {
            proxy.tags.insert(
                "kong.preread.duration_ms".into(),
                session.kong_latency_ms.to_string(),
            );
        }
    }
    out.push(proxy);

    let mut request = trace.span(("stream".into(), "SERVER"), request_id, None, start, now);
    request.remote_endpoint = remote(config.default_service_name.as_deref(), Some(session.client));
    request.tags.insert("lc".into(), "kong".into());
    for tag in config.static_tags.iter().flatten() {
        request.tags.insert(tag.name.clone(), tag.value.clone());
    }
    request.tags.retain(|_, v| !v.is_empty());
    out.push(request);
    serialized(out)
}
