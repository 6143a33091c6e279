//! `opentelemetry` (priority 14): traces over OTLP/HTTP (protobuf) to `traces_endpoint`, and tracing headers
//! in and out with Kong's `propagation` record.
//!
//! `access` reads the incoming context (the first `propagation.extract` format found), decides sampling
//! (an incoming "not sampled" wins, otherwise Kong's trace-id-based sampler at `sampling_rate`), and writes
//! the outgoing headers to the upstream request: the trace id (the incoming one or a new one) with the span
//! id of the balancer span that will represent the upstream call. `log` turns a sampled request into Kong's
//! spans — the `kong` server span and a `kong.balancer` client span per try (see [`spans`]) — encodes each
//! and queues it; the `sluice-log` thread batches them (Kong's `queue`, 200 spans by default) into
//! `ExportTraceServiceRequest`s. A request that is not sampled stops after propagation.
//!
//! Sluice traces as Kong does with `tracing_instrumentations = request,balancer`; `sampling_rate` unset
//! means Kong's `tracing_sampling_rate` default, 0.01. `logs_endpoint` (Kong's log export of `kong.log`
//! calls made by Lua code) is refused: Sluice runs no Lua.

mod proto;
mod spans;

use crate::ctx::RequestCtx;
use crate::logging::queue::{queue_schema, Queue, QueueConfig};
use crate::logging::runtime;
use crate::plugin::{Flow, Plugin};
use crate::registry::{typed_config, BuildCtx, Builtin};
use crate::tracing::context::{new_span_id, new_trace_id, sample, TraceContext};
use crate::tracing::export::{Exporter, Timeouts};
use crate::tracing::propagation::{self, Propagation, PropagationConfig};
use crate::tracing::trace_header::{register, TraceHeader};
use serde::Deserialize;
use serde_json::{json, Map, Value};
use sluice_model::declarative::schemas::typedefs;
use sluice_model::schema::{Field, FieldError, Schema};
use std::collections::BTreeMap;
use std::sync::Arc;

#[derive(Debug, Deserialize)]
struct Config {
    /// Also set by Kong's deprecated shorthand `endpoint`, which is not kept.
    traces_endpoint: Option<String>,
    headers: Option<BTreeMap<String, String>>,
    resource_attributes: Option<BTreeMap<String, String>>,
    queue: QueueConfig,
    /// Deprecated: `queue.max_batch_size` when set and not 200.
    batch_span_count: Option<usize>,
    /// Deprecated: `queue.max_coalescing_delay` when set and not 3.
    batch_flush_delay: Option<f64>,
    connect_timeout: u64,
    send_timeout: u64,
    read_timeout: u64,
    http_response_header_for_traceid: Option<String>,
    header_type: Option<String>,
    sampling_rate: Option<f64>,
    propagation: PropagationConfig,
}

fn timeout(default: u64) -> Field {
    Field::integer().default(default).between(0.0, 2147483646.0)
}

fn schema() -> Schema {
    let url = || Field::string().check(check_url);
    Schema::new(vec![
        ("traces_endpoint", url()),
        ("logs_endpoint", url()),
        ("endpoint", url()),
        (
            "headers",
            Field::map(Field::string()).keys(Field::string().check(typedefs::header_name)),
        ),
        (
            "resource_attributes",
            Field::map(Field::string().required().len_min(1)),
        ),
        (
            "queue",
            Field::record(queue_schema()).default(json!({ "max_batch_size": 200 })),
        ),
        ("batch_span_count", Field::integer()),
        ("batch_flush_delay", Field::integer()),
        ("connect_timeout", timeout(1000)),
        ("send_timeout", timeout(5000)),
        ("read_timeout", timeout(5000)),
        ("http_response_header_for_traceid", Field::string()),
        (
            "header_type",
            Field::string()
                .default("preserve")
                .one_of(propagation::HEADER_TYPES),
        ),
        ("sampling_rate", Field::number().between(0.0, 1.0)),
        ("propagation", propagation::field("w3c")),
    ])
    .with_subschema(endpoint_shorthand)
    .with_check(check_endpoints)
}

/// Kong's deprecated shorthand: `endpoint` sets `traces_endpoint` and is not kept (so not exported).
fn endpoint_shorthand(_: &Map<String, Value>, out: &mut Map<String, Value>) {
    if let Some(v) = out.remove("endpoint").filter(|v| !v.is_null()) {
        out.insert("traces_endpoint".into(), v);
    }
}

/// Kong's `url` type: an absolute http(s) URL with a host.
pub(crate) fn check_url(v: &Value) -> Result<(), String> {
    typedefs::url(v)?;
    let s = v.as_str().unwrap_or_default();
    match url::Url::parse(s) {
        Ok(u) if matches!(u.scheme(), "http" | "https") && u.host_str().is_some() => Ok(()),
        _ => Err(format!("invalid url '{s}'")),
    }
}

fn check_endpoints(m: &Map<String, Value>) -> Result<(), Vec<FieldError>> {
    let set = |k: &str| m.get(k).is_some_and(|v| !v.is_null());
    if set("logs_endpoint") {
        return Err(vec![FieldError::new(
            "logs_endpoint",
            "not supported: Sluice exports no logs over OTLP (Kong's are the log calls of Lua code)",
        )]);
    }
    if !set("traces_endpoint") {
        return Err(vec![FieldError::entity_check(
            "at least one of these fields must be non-empty: 'traces_endpoint', 'logs_endpoint'",
        )]);
    }
    Ok(())
}

pub fn builtin() -> Builtin {
    Builtin::new("opentelemetry", 14, schema(), build)
}

/// One configured instance.
struct Otel {
    queue: Arc<Queue>,
    propagation: Propagation,
    sampling_rate: f64,
    trace_header: TraceHeader,
}

/// What `access` decided, kept for `header_filter` and `log` (in [`RequestCtx::plugin_data`]).
#[derive(Clone, Copy)]
struct Traced {
    trace_id: [u8; 16],
    root_span: [u8; 8],
    /// The span id sent upstream: the last balancer try's span.
    balancer_span: [u8; 8],
    /// The incoming span, parent of the root span.
    parent: Option<[u8; 8]>,
    sampled: bool,
}

fn build(ctx: &BuildCtx<'_>, entity: &sluice_model::Plugin) -> Result<Arc<dyn Plugin>, String> {
    let config: Config = typed_config(entity)?;
    let mut queue_config = config.queue.clone();
    if let Some(n) = config.batch_span_count.filter(|n| *n != 200) {
        tracing::warn!("opentelemetry: config.batch_span_count is deprecated, please use config.queue.max_batch_size instead");
        queue_config.max_batch_size = n.max(1);
    }
    if let Some(d) = config.batch_flush_delay.filter(|d| *d != 3.0) {
        tracing::warn!("opentelemetry: config.batch_flush_delay is deprecated, please use config.queue.max_coalescing_delay instead");
        queue_config.max_coalescing_delay = d.clamp(0.0, 3600.0);
    }
    let endpoint = config.traces_endpoint.clone();
    let endpoint = endpoint.ok_or("no traces_endpoint")?;
    let key = format!("opentelemetry {}", entity.config);
    let queue = ctx.state.log_queues().get_or_start(key, || {
        let (resource, scope) = spans::resource_and_scope(config.resource_attributes.as_ref());
        let headers: Vec<(String, String)> = config
            .headers
            .clone()
            .unwrap_or_default()
            .into_iter()
            .collect();
        let timeouts = Timeouts {
            connect: config.connect_timeout,
            send: config.send_timeout,
            read: config.read_timeout,
        };
        let frame =
            Box::new(move |batch: &[bytes::Bytes]| proto::export_request(&resource, &scope, batch));
        let exporter = Exporter::new(
            &endpoint,
            "application/x-protobuf",
            &headers,
            &timeouts,
            frame,
            Some(200),
        )?;
        let name = exporter.endpoint_name();
        Ok(Queue::start(
            "opentelemetry",
            name,
            queue_config,
            exporter,
            runtime::handle()?,
        ))
    })?;
    let propagation = Propagation::new(&config.propagation, config.header_type.as_deref(), None);
    let trace_header = TraceHeader::new(config.http_response_header_for_traceid.as_deref())?;
    let reports = trace_header.is_set();
    let otel = Otel {
        queue,
        propagation,
        sampling_rate: config.sampling_rate.unwrap_or(0.01),
        trace_header,
    };
    Ok(register(
        "opentelemetry",
        otel,
        Otel::access,
        Otel::log,
        Otel::header_filter,
        reports,
    )
    .build())
}

impl Otel {
    fn access(&self, ctx: &mut RequestCtx<'_>) -> Flow {
        let extracted = self.propagation.extract(&ctx.request.headers);
        let incoming = &extracted.ctx;
        let trace_id = incoming.trace_id.unwrap_or_else(new_trace_id);
        let sampled =
            incoming.should_sample != Some(false) && sample(&trace_id, self.sampling_rate);
        let traced = Traced {
            trace_id,
            root_span: new_span_id(),
            balancer_span: new_span_id(),
            parent: incoming.span_id.or(incoming.parent_id),
            sampled,
        };
        let out = TraceContext {
            trace_id: Some(trace_id),
            span_id: Some(traced.balancer_span),
            parent_id: Some(traced.root_span),
            should_sample: Some(sampled),
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
        if let Some(traced) = ctx.plugin_data.get::<Traced>() {
            self.trace_header.add(response, &traced.trace_id);
        }
    }

    fn log(&self, ctx: &RequestCtx<'_>, record: &crate::ctx::LogRecord) {
        let Some(traced) = ctx.plugin_data.get::<Traced>().filter(|t| t.sampled) else {
            return;
        };
        if self.queue.is_full() {
            // Nothing written for a queue that would refuse it; each span is counted as refused.
            (0..=record.tries.len()).for_each(|_| self.queue.refuse());
            return;
        }
        spans::spans(ctx, record, traced, |span| {
            self.queue.push(span);
        });
    }
}

#[cfg(test)]
mod tests;
