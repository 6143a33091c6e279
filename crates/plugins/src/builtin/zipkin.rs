//! `zipkin` (priority 100000): Zipkin v2 JSON spans to `http_endpoint`, and tracing headers in and out with
//! Kong's `propagation` record (`header_type` / `default_header_type` mapped onto it as in Kong).
//!
//! `access` reads the incoming context, decides sampling (the incoming decision, else `sample_ratio`),
//! picks the request span's ids (B3 and Jaeger share the sender's span id; other formats make it the
//! parent) and writes the upstream headers with the proxy span's id. `log` builds Kong's span layout for a
//! sampled request (see [`spans`]): the request span (`SERVER`, named after the method, or method and path),
//! its `(proxy)` child and one `(balancer try N)` child per upstream try, each queued as one JSON object;
//! the `sluice-log` thread posts batches as JSON arrays. A request that is not sampled stops after
//! propagation; without `http_endpoint` nothing is sent.
//!
//! On L4 streams (Kong's stream subsystem) a finished session is sampled by `sample_ratio` with a new
//! trace, and reported as Kong's `stream` spans ([`session`]).

mod session;
mod spans;

use crate::ctx::{LogRecord, RequestCtx};
use crate::logging::queue::{queue_schema, Queue, QueueConfig};
use crate::logging::runtime;
use crate::plugin::{Flow, Plugin};
use crate::registry::{typed_config, BuildCtx, Builtin};
use crate::stream::SessionRecord;
use crate::tracing::context::{new_span_id, TraceContext};
use crate::tracing::export::{Exporter, Timeouts};
use crate::tracing::propagation::{self, Propagation, PropagationConfig};
use crate::tracing::trace_header::{register, TraceHeader};
use serde::Deserialize;
use serde_json::Value;
use sluice_model::schema::{Field, Schema};
use std::sync::Arc;
use std::time::Instant;

/// Tags a `static_tags` entry may not set (Kong's protected tags).
const PROTECTED_TAGS: &[&str] = &[
    "error",
    "http.method",
    "http.path",
    "http.status_code",
    "kong.balancer.state",
    "kong.balancer.try",
    "kong.consumer",
    "kong.credential",
    "kong.node.id",
    "kong.route",
    "kong.service",
    "lc",
    "peer.hostname",
];

#[derive(Debug, Deserialize)]
struct StaticTag {
    name: String,
    value: String,
}

#[derive(Debug, Deserialize)]
struct Config {
    local_service_name: String,
    http_endpoint: Option<String>,
    sample_ratio: f64,
    default_service_name: Option<String>,
    include_credential: bool,
    traceid_byte_count: usize,
    header_type: String,
    default_header_type: String,
    tags_header: String,
    static_tags: Option<Vec<StaticTag>>,
    http_span_name: String,
    connect_timeout: u64,
    send_timeout: u64,
    read_timeout: u64,
    http_response_header_for_traceid: Option<String>,
    phase_duration_flavor: String,
    queue: QueueConfig,
    propagation: PropagationConfig,
}

fn schema() -> Schema {
    let timeout = |d: u64| Field::integer().default(d).between(0.0, 2147483646.0);
    let not_protected = |v: &Value| match PROTECTED_TAGS.contains(&v.as_str().unwrap_or_default()) {
        true => Err(format!("must not be one of: {}", PROTECTED_TAGS.join(", "))),
        false => Ok(()),
    };
    let static_tag = Schema::new(vec![
        ("name", Field::string().required().check(not_protected)),
        ("value", Field::string().required()),
    ]);
    Schema::new(vec![
        (
            "local_service_name",
            Field::string().required().default("kong"),
        ),
        (
            "http_endpoint",
            Field::string().check(super::opentelemetry::check_url),
        ),
        (
            "sample_ratio",
            Field::number().default(0.001).between(0.0, 1.0),
        ),
        ("default_service_name", Field::string()),
        (
            "include_credential",
            Field::boolean().required().default(true),
        ),
        (
            "traceid_byte_count",
            Field::integer().required().default(16).one_of_int(&[8, 16]),
        ),
        (
            "header_type",
            Field::string()
                .required()
                .default("preserve")
                .one_of(propagation::HEADER_TYPES),
        ),
        (
            "default_header_type",
            Field::string()
                .required()
                .default("b3")
                .one_of(propagation::INJECTORS),
        ),
        (
            "tags_header",
            Field::string().required().default("Zipkin-Tags"),
        ),
        (
            "static_tags",
            Field::array(Field::record(static_tag)).check(repeated_tags),
        ),
        (
            "http_span_name",
            Field::string()
                .required()
                .default("method")
                .one_of(&["method", "method_path"]),
        ),
        ("connect_timeout", timeout(2000)),
        ("send_timeout", timeout(5000)),
        ("read_timeout", timeout(5000)),
        ("http_response_header_for_traceid", Field::string()),
        (
            "phase_duration_flavor",
            Field::string()
                .required()
                .default("annotations")
                .one_of(&["annotations", "tags"]),
        ),
        ("queue", Field::record(queue_schema())),
        ("propagation", propagation::field("b3")),
    ])
}

fn repeated_tags(v: &Value) -> Result<(), String> {
    let mut seen = std::collections::HashSet::new();
    for tag in v.as_array().into_iter().flatten() {
        let name = tag["name"].as_str().unwrap_or_default();
        if !seen.insert(name) {
            return Err(format!("repeated tags are not allowed: {name}"));
        }
    }
    Ok(())
}

pub fn builtin() -> Builtin {
    Builtin::new("zipkin", 100000, schema(), build)
}

/// One configured instance.
struct Zipkin {
    /// None without `http_endpoint`: headers are still propagated.
    queue: Option<Arc<Queue>>,
    propagation: Propagation,
    config: Config,
    trace_header: TraceHeader,
}

/// What `access` decided, for `header_filter` and `log`.
#[derive(Clone)]
struct Traced {
    /// The trace id: 16 bytes, of which the last `trace_len` are the id (8 for a new id with
    /// `traceid_byte_count: 8`).
    trace_id: [u8; 16],
    trace_len: usize,
    request_span: [u8; 8],
    parent: Option<[u8; 8]>,
    proxy_span: [u8; 8],
    sampled: bool,
    access_start: Instant,
}

fn build(ctx: &BuildCtx<'_>, entity: &sluice_model::Plugin) -> Result<Arc<dyn Plugin>, String> {
    let config: Config = typed_config(entity)?;
    let queue = match &config.http_endpoint {
        None => None,
        Some(endpoint) => Some(ctx.state.log_queues().get_or_start(
            format!("zipkin {}", entity.config),
            || {
                let timeouts = Timeouts {
                    connect: config.connect_timeout,
                    send: config.send_timeout,
                    read: config.read_timeout,
                };
                let exporter = Exporter::new(
                    endpoint,
                    "application/json",
                    &[],
                    &timeouts,
                    Box::new(crate::logging::json::array),
                    None,
                )?;
                let name = exporter.endpoint_name();
                Ok(Queue::start(
                    "zipkin",
                    name,
                    config.queue.clone(),
                    exporter,
                    runtime::handle()?,
                ))
            },
        )?),
    };
    let propagation = Propagation::new(
        &config.propagation,
        Some(&config.header_type),
        Some(&config.default_header_type),
    );
    let trace_header = TraceHeader::new(config.http_response_header_for_traceid.as_deref())?;
    let reports = trace_header.is_set();
    let zipkin = Zipkin {
        queue,
        propagation,
        config,
        trace_header,
    };
    Ok(register(
        "zipkin",
        zipkin,
        Zipkin::access,
        Zipkin::log,
        Zipkin::header_filter,
        reports,
    )
    .stream_log(Zipkin::stream_log)
    .build())
}

impl Zipkin {
    fn access(&self, ctx: &mut RequestCtx<'_>) -> Flow {
        let access_start = Instant::now();
        let extracted = self.propagation.extract(&ctx.request.headers);
        let incoming = &extracted.ctx;
        let sampled = incoming
            .should_sample
            .unwrap_or_else(|| rand::random::<f64>() < self.config.sample_ratio);
        let (trace_id, trace_len) = match incoming.trace_id {
            Some(id) => (id, 16),
            None => {
                let mut id: [u8; 16] = rand::random();
                id[..16 - self.config.traceid_byte_count].fill(0);
                (id, self.config.traceid_byte_count)
            }
        };
        let (request_span, parent) = match incoming.reuse_span_id {
            true => (
                incoming.span_id.unwrap_or_else(new_span_id),
                incoming.parent_id,
            ),
            false => (new_span_id(), incoming.span_id),
        };
        let traced = Traced {
            trace_id,
            trace_len,
            request_span,
            parent,
            proxy_span: new_span_id(),
            sampled,
            access_start,
        };
        let out = TraceContext {
            trace_id: Some(trace_id),
            span_id: Some(traced.proxy_span),
            parent_id: Some(request_span),
            // Kong's `proxy.should_sample or extracted.should_sample or nil`: "not sampled" is left out.
            should_sample: sampled.then_some(true),
            ..extracted.ctx
        };
        self.propagation
            .finish(&mut ctx.request.headers, extracted.format, &out);
        if sampled || self.trace_header.is_set() {
            ctx.plugin_data.insert(traced);
        }
        Flow::Continue
    }

    /// Adds `http_response_header_for_traceid: <trace id hex>` (registered only when configured).
    fn header_filter(&self, ctx: &mut RequestCtx<'_>, response: &mut http::response::Parts) {
        if let Some(t) = ctx.plugin_data.get::<Traced>() {
            self.trace_header
                .add(response, &t.trace_id[16 - t.trace_len..]);
        }
    }

    fn log(&self, ctx: &RequestCtx<'_>, record: &LogRecord) {
        let (Some(queue), Some(traced)) = (&self.queue, ctx.plugin_data.get::<Traced>()) else {
            return;
        };
        if !traced.sampled {
            return;
        }
        push_all(queue, spans::spans(ctx, record, traced, &self.config));
    }

    fn stream_log(&self, session: &SessionRecord<'_>) {
        let Some(queue) = &self.queue else {
            return;
        };
        if rand::random::<f64>() < self.config.sample_ratio {
            push_all(queue, session::spans(session, &self.config));
        }
    }
}

/// Queues a trace's spans, stopping at the first the full queue refuses.
fn push_all(queue: &Queue, spans: Vec<Vec<u8>>) {
    for span in spans {
        if !queue.push(span.into()) {
            break;
        }
    }
}

#[cfg(test)]
mod tests;
