//! `request-termination` (priority 2): answers every request with a fixed response, optionally only when a
//! trigger header or query argument is present, or echoes the request back (`echo`).

use crate::ctx::RequestCtx;
use crate::plugin::{Flow, Plugin, Registered};
use crate::registry::{typed_config, BuildCtx, Builtin};
use crate::response::PluginResponse;
use http::StatusCode;
use serde::Deserialize;
use serde_json::{json, Map, Value};
use sluice_model::declarative::schemas::typedefs;
use sluice_model::schema::{Field, FieldError, Schema};
use std::sync::Arc;

/// The plugin's config, after schema validation.
#[derive(Debug, Deserialize)]
struct Config {
    /// Status of the response (100–599).
    status_code: u16,
    /// Message for the default `{"message": ...}` body; exclusive with `body`.
    message: Option<String>,
    /// A raw body sent as is, with `content_type`.
    body: Option<String>,
    content_type: Option<String>,
    /// Return the request (and the matched route, service, consumer) as JSON instead.
    echo: bool,
    /// Only terminate when this header or query argument is present.
    trigger: Option<String>,
}

fn schema() -> Schema {
    Schema::new(vec![
        (
            "status_code",
            Field::integer().default(503).between(100.0, 599.0),
        ),
        ("message", Field::string()),
        ("content_type", Field::string()),
        ("body", Field::string()),
        ("echo", Field::boolean().default(false)),
        ("trigger", Field::string().check(typedefs::header_name)),
    ])
    .with_check(|m: &Map<String, Value>| {
        if !m["message"].is_null() && (!m["body"].is_null() || !m["content_type"].is_null()) {
            return Err(vec![FieldError::entity(
                "message cannot be used with content_type or body",
            )]);
        }
        if !m["content_type"].is_null() && m["body"].is_null() {
            return Err(vec![FieldError::entity("content_type requires a body")]);
        }
        Ok(())
    })
}

pub fn builtin() -> Builtin {
    Builtin::new("request-termination", 2, schema(), build)
}

fn build(_: &BuildCtx<'_>, entity: &sluice_model::Plugin) -> Result<Arc<dyn Plugin>, String> {
    let config: Config = typed_config(entity)?;
    let status = StatusCode::from_u16(config.status_code).map_err(|e| e.to_string())?;
    Ok(register(RequestTermination { config, status }))
}

struct RequestTermination {
    config: Config,
    status: StatusCode,
}

/// Kong's default messages per status.
fn default_message(status: StatusCode) -> &'static str {
    match status.as_u16() {
        401 => "Unauthorized",
        404 => "Not found",
        405 => "Method not allowed",
        500 => "An unexpected error occurred",
        502 => "Bad Gateway",
        503 => "Service unavailable",
        _ => status.canonical_reason().unwrap_or("Terminated"),
    }
}

fn triggered(trigger: &str, ctx: &RequestCtx<'_>) -> bool {
    ctx.request.headers.contains_key(trigger)
        || ctx.request.uri.query().is_some_and(|q| {
            q.split('&')
                .any(|pair| pair.split('=').next().is_some_and(|k| k == trigger))
        })
}

fn echo(ctx: &RequestCtx<'_>) -> Value {
    let mut headers = Map::new();
    for (name, value) in &ctx.request.headers {
        headers.insert(
            name.as_str().into(),
            String::from_utf8_lossy(value.as_bytes()).into(),
        );
    }
    let query: Map<String, Value> = ctx
        .request
        .uri
        .query()
        .unwrap_or_default()
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (k.to_string(), Value::from(v))
        })
        .collect();
    json!({
        "request": {
            "scheme": ctx.scheme,
            "host": ctx.request.headers.get(http::header::HOST).and_then(|h| h.to_str().ok()),
            "method": ctx.request.method.as_str(),
            "path": ctx.request.uri.path(),
            "query": query,
            "headers": headers,
            "raw_body": ctx.body.as_ref().map(|b| String::from_utf8_lossy(b).into_owned()),
        },
        "matched_route": ctx.route,
        "matched_service": ctx.service,
        "consumer": ctx.consumer,
    })
}

impl RequestTermination {
    fn access(&self, ctx: &mut RequestCtx<'_>) -> Flow {
        if let Some(trigger) = &self.config.trigger {
            if !triggered(trigger, ctx) {
                return Flow::Continue;
            }
        }
        let response = if self.config.echo {
            PluginResponse::json(self.status, echo(ctx).to_string().into())
        } else if let Some(body) = &self.config.body {
            let ct = self
                .config
                .content_type
                .as_deref()
                .unwrap_or("application/json; charset=utf-8");
            PluginResponse::json(self.status, body.clone().into())
                .with_header(http::header::CONTENT_TYPE, ct)
        } else {
            PluginResponse::message(
                self.status,
                self.config
                    .message
                    .as_deref()
                    .unwrap_or(default_message(self.status)),
            )
        };
        Flow::Respond(response)
    }
}

/// This plugin's phases: each handler is registered here, next to where it is implemented.
fn register(plugin: RequestTermination) -> Arc<dyn Plugin> {
    Registered::new("request-termination", plugin)
        .access(RequestTermination::access)
        .build()
}
