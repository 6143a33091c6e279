//! `http-log` (priority 12): sends each request's log record as JSON to an HTTP endpoint, in batches, from
//! the `sluice-log` thread (see [`crate::logging`]). One object per request when `queue.max_batch_size` is 1,
//! otherwise a JSON array, as Kong. A non-2xx answer or a transport error is retried with backoff.
//!
//! Config as Kong 3.x: `http_endpoint` (http or https; user info becomes a Basic `Authorization` header),
//! `method` (POST/PUT/PATCH), `content_type`, `timeout` and `keepalive` (ms), `headers`, `queue`, and the
//! deprecated `queue_size` / `flush_timeout` (mapped onto `queue` as Kong does) and `retry_count` (ignored,
//! as in Kong). `custom_fields_by_lua` is refused when non-empty. As in Kong, TLS certificates of the log
//! endpoint are not verified.

mod sink;

use crate::logging::legacy::LegacyQueueFields;
use crate::logging::logger::{check_no_lua, custom_fields_by_lua, QueueLogger};
use crate::logging::queue::{queue_schema, Queue, QueueConfig};
use crate::logging::runtime;
use crate::plugin::Plugin;
use crate::registry::{typed_config, BuildCtx, Builtin};
use serde::Deserialize;
use serde_json::{Map, Value};
use sluice_model::declarative::schemas::typedefs;
use sluice_model::schema::{Field, FieldError, Schema};
use std::sync::Arc;

/// The plugin's config, after schema validation.
#[derive(Debug, Deserialize)]
struct Config {
    /// Where records are sent: `http(s)://[user:password@]host[:port]/path`.
    http_endpoint: String,
    /// `POST`, `PUT` or `PATCH`.
    method: String,
    content_type: String,
    /// Milliseconds for one delivery (connect, send, response).
    timeout: f64,
    /// Milliseconds an idle connection to the endpoint is kept.
    keepalive: f64,
    /// Deprecated `retry_count`, `queue_size`, `flush_timeout`.
    #[serde(flatten)]
    legacy: LegacyQueueFields,
    /// Extra request headers (not Host, Content-Length or Content-Type).
    headers: Option<Map<String, Value>>,
    queue: QueueConfig,
}

fn schema() -> Schema {
    Schema::new(vec![
        (
            "http_endpoint",
            Field::string()
                .required()
                .check(typedefs::url)
                .check(|v| sink::Endpoint::parse(v.as_str().unwrap_or_default()).map(|_| ())),
        ),
        (
            "method",
            Field::string()
                .default("POST")
                .one_of(&["POST", "PUT", "PATCH"]),
        ),
        (
            "content_type",
            Field::string()
                .default("application/json")
                .one_of(&["application/json", "application/json; charset=utf-8"]),
        ),
        ("timeout", Field::number().default(10000)),
        ("keepalive", Field::number().default(60000)),
        ("retry_count", Field::integer()),
        ("queue_size", Field::integer()),
        ("flush_timeout", Field::number()),
        (
            "headers",
            Field::map(Field::string()).keys(Field::string().check(header_key)),
        ),
        ("queue", Field::record(queue_schema())),
        ("custom_fields_by_lua", custom_fields_by_lua()),
    ])
    .with_check(check_headers)
    .with_check(check_no_lua)
}

/// Kong's `headers` keys: not Host, Content-Length or Content-Type (the sink sets them), then a
/// header name.
fn header_key(v: &Value) -> Result<(), String> {
    let name = v.as_str().unwrap_or_default();
    match name.to_ascii_lowercase().as_str() {
        "host" => Err("cannot contain 'Host' header".into()),
        "content-length" => Err("cannot contain 'Content-Length' header".into()),
        "content-type" => Err("cannot contain 'Content-Type' header".into()),
        _ => typedefs::header_name(v),
    }
}

/// Header values the sink can send, and no Authorization header together with user info in the
/// endpoint. Errors sit on `headers`, as Kong reports a map's.
fn check_headers(m: &Map<String, Value>) -> Result<(), Vec<FieldError>> {
    let Some(headers) = m["headers"].as_object() else {
        return Ok(());
    };
    let mut errors = Vec::new();
    for (name, value) in headers {
        if http::HeaderValue::from_str(value.as_str().unwrap_or_default()).is_err() {
            errors.push(FieldError::new(
                "headers",
                format!("invalid value for header '{name}'"),
            ));
        }
    }
    let userinfo = m["http_endpoint"]
        .as_str()
        .and_then(|e| sink::Endpoint::parse(e).ok())
        .is_some_and(|e| e.userinfo.is_some());
    if userinfo
        && headers
            .keys()
            .any(|k| k.eq_ignore_ascii_case("authorization"))
    {
        errors.push(FieldError::entity(
            "specifying both an 'Authorization' header and user info in 'http_endpoint' is not allowed",
        ));
    }
    errors.is_empty().then_some(()).ok_or(errors)
}

pub fn builtin() -> Builtin {
    Builtin::new("http-log", 12, schema(), build)
}

/// The queue settings after Kong's legacy fields were applied.
fn effective_queue(config: &Config) -> QueueConfig {
    config.legacy.apply("http-log", &config.queue)
}

fn build(ctx: &BuildCtx<'_>, entity: &sluice_model::Plugin) -> Result<Arc<dyn Plugin>, String> {
    let config: Config = typed_config(entity)?;
    let queue_config = effective_queue(&config);
    // Instances with the same settings share one queue, and a reload with the same settings keeps it.
    let key = format!("http-log {}", entity.config);
    let queue = ctx.state.log_queues().get_or_start(key, || {
        let sink = sink::HttpSink::new(&config, queue_config.max_batch_size > 1)?;
        let name = sink.endpoint_name();
        Ok(Queue::start(
            "http-log",
            name,
            queue_config,
            sink,
            runtime::handle()?,
        ))
    })?;
    Ok(QueueLogger::register("http-log", queue, ctx.entity_json()))
}

#[cfg(test)]
mod tests;
