//! `grpc-gateway` (priority 998): lets a REST client call a gRPC service with JSON, through the
//! `google.api.http` bindings of the config's `.proto`, as Kong does it.
//!
//! - When the config is validated, then when the plugin is built (each config load): `proto` is compiled
//!   ([`grpc_proto`]) and its bindings read ([`rules`]); a file that is missing or does not compile, or
//!   a binding whose path template is invalid, is an error of the `proto` field (Kong finds out at the
//!   first request and answers 500).
//! - `access`: every response gets `Access-Control-Allow-Origin: *`; an `OPTIONS` is answered `200 OK`
//!   with Kong's CORS headers. Otherwise the request's method and path (normalized as Kong's
//!   `kong.request.get_path` does) pick a binding (none: Kong's 400,
//!   `failed to transcode .proto file Unknown path "..."`), whose path variables, JSON body or query
//!   string make the input message ([`payload`]), and the request becomes the gRPC call: `POST
//!   /<package>.<Service>/<Method>` without query, `Content-Type: application/grpc`, `TE: trailers`, the
//!   message in one frame. A body that is not JSON, or that does not fit the type, gets Kong's 400.
//! - `header_filter`: the response is `application/json`, and a `grpc-status` in its head (a failed
//!   unary call's trailers-only answer) becomes its HTTP status ([`response::http_status`]).
//! - `body_filter`: the upstream's messages become JSON objects ([`response`]).
//!
//! Without `proto`, every request but a preflight gets Kong's 400.

mod payload;
mod response;
mod rules;
mod template;
#[cfg(test)]
mod tests;
mod values;

use crate::builtin::grpc_proto::{self, frame};
use crate::ctx::RequestCtx;
use crate::plugin::{Flow, Plugin, Registered};
use crate::registry::{typed_config, BuildCtx, Builtin};
use crate::response::PluginResponse;
use bytes::Bytes;
use http::header::{ACCESS_CONTROL_ALLOW_ORIGIN, CONTENT_LENGTH, CONTENT_TYPE, TE};
use http::{HeaderMap, HeaderValue, Method, StatusCode, Uri};
use response::Downstream;
use rules::Endpoints;
use serde::Deserialize;
use sluice_model::schema::{Field, Schema};
use std::sync::Arc;

/// The plugin's config, after schema validation.
#[derive(Debug, Deserialize)]
struct Config {
    /// The `.proto` file (a path on the node) that describes the gRPC types, methods and bindings.
    proto: Option<String>,
}

fn schema() -> Schema {
    Schema::new(vec![("proto", Field::string().check(check_proto))])
}

/// A `proto` that is missing, does not compile or has an invalid binding is a field error of the config
/// (compiled again when the plugin is built).
fn check_proto(value: &serde_json::Value) -> Result<(), String> {
    match value.as_str() {
        Some(file) => endpoints(file).map(drop),
        None => Ok(()),
    }
}

/// The bindings of the `.proto` at `file` (its name in the pool is its file name: its folder is the
/// include path).
fn endpoints(file: &str) -> Result<Endpoints, String> {
    let name = std::path::Path::new(file).file_name();
    let name = name.and_then(|n| n.to_str()).unwrap_or(file);
    Endpoints::of(&grpc_proto::compile(file)?, name)
}

pub fn builtin() -> Builtin {
    Builtin::new("grpc-gateway", 998, schema(), build)
}

fn build(_: &BuildCtx<'_>, entity: &sluice_model::Plugin) -> Result<Arc<dyn Plugin>, String> {
    let config: Config = typed_config(entity)?;
    let endpoints = match config.proto.as_deref() {
        Some(file) => Some(endpoints(file)?),
        None => None,
    };
    Ok(Registered::new("grpc-gateway", GrpcGateway { endpoints })
        .access(GrpcGateway::access)
        .header_filter(GrpcGateway::header_filter)
        .body_filter(GrpcGateway::body_filter)
        .reads_request_body(true)
        .build())
}

struct GrpcGateway {
    /// The `proto`'s bindings; None without `proto`.
    endpoints: Option<Endpoints>,
}

impl GrpcGateway {
    fn access(&self, ctx: &mut RequestCtx<'_>) -> Flow {
        let any = HeaderValue::from_static("*");
        ctx.response_headers
            .insert(ACCESS_CONTROL_ALLOW_ORIGIN, any);
        if ctx.request.method == Method::OPTIONS {
            return Flow::Respond(preflight());
        }
        let (path, downstream, body) = match self.translate(ctx) {
            Ok(call) => call,
            Err(refused) => {
                tracing::error!("grpc-gateway: {refused}");
                return Flow::Respond(PluginResponse {
                    status: StatusCode::BAD_REQUEST,
                    headers: HeaderMap::new(),
                    body: Bytes::from(refused),
                });
            }
        };
        let request = &mut ctx.request;
        request.method = Method::POST;
        request.uri = path;
        let headers = &mut request.headers;
        let grpc = HeaderValue::from_static("application/grpc");
        headers.insert(CONTENT_TYPE, grpc);
        headers.insert(TE, HeaderValue::from_static("trailers"));
        headers.insert(CONTENT_LENGTH, HeaderValue::from(body.len()));
        ctx.body = Some(body);
        ctx.plugin_data.insert(downstream);
        Flow::Continue
    }

    /// The call for the request: its gRPC path, its response's transcoder, and its framed message; or
    /// Kong's message for a 400.
    fn translate(&self, ctx: &mut RequestCtx<'_>) -> Result<(Uri, Downstream, Bytes), String> {
        let Some(endpoints) = &self.endpoints else {
            return Err("transcoding requests require a .proto file defining the service".into());
        };
        let uri = &ctx.request.uri;
        let path = sluice_model::uri_path::normalize(uri.path());
        let (endpoint, vars) = endpoints
            .find(&ctx.request.method, &path)
            .map_err(|e| format!("failed to transcode .proto file {e}"))?;
        let body = ctx.body.take().unwrap_or_default();
        let message = payload::build(endpoint, vars, uri.query(), &body)?;
        let path = grpc_proto::with_target(uri, &endpoint.rewrite);
        let downstream = Downstream::new(endpoint.output.clone());
        Ok((path, downstream, frame(0, &message)))
    }

    fn header_filter(&self, ctx: &mut RequestCtx<'_>, response: &mut http::response::Parts) {
        if ctx.request.method == Method::OPTIONS {
            return;
        }
        if ctx.plugin_data.get::<Downstream>().is_some() {
            let json = HeaderValue::from_static("application/json");
            response.headers.insert(CONTENT_TYPE, json);
            response.headers.remove(CONTENT_LENGTH);
        }
        let status = response.headers.get("grpc-status");
        if let Some(status) = status.and_then(response::http_status) {
            response.status = status;
        }
    }

    fn body_filter(&self, ctx: &mut RequestCtx<'_>, chunk: &mut Bytes, eof: bool) {
        if let Some(downstream) = ctx.plugin_data.get_mut::<Downstream>() {
            *chunk = downstream.chunk(chunk, eof);
        }
    }
}

/// Kong's answer to a preflight.
fn preflight() -> PluginResponse {
    let any = HeaderValue::from_static("*");
    grpc_proto::preflight(
        "application/json",
        any,
        "GET,POST,PATCH,DELETE",
        "content-type",
    )
}
