//! `grpc-web` (priority 3): lets a browser-style client call a gRPC service over HTTP/1.1 (or h2) with
//! `Content-Type: application/grpc-web(+proto)` or, base64-encoded, `application/grpc-web-text(+proto)`,
//! as Kong does it.
//!
//! - `access`: every response gets `Access-Control-Allow-Origin: <allow_origin_header>`; an `OPTIONS` is a
//!   preflight, answered `200 OK` with Kong's fixed CORS headers. Otherwise the request becomes a gRPC
//!   call: `Content-Type: application/grpc`, `TE: trailers`, the body decoded from base64 in text mode
//!   (the whole body is read first, as Kong reads it), and with `pass_stripped_path` the path the upstream
//!   would get over HTTP (`strip_path`, the service's `path`) instead of the client's. A route whose
//!   service is `grpc`/`grpcs` sends it upstream over HTTP/2 whatever the client spoke.
//! - `header_filter`: the response gets the request's `Content-Type` back.
//! - `body_filter`: each piece is base64-encoded in text mode, and at the end a trailer frame (flag `0x80`)
//!   carries `grpc-status` and `grpc-message`: from the upstream's trailers, which the proxy then does not
//!   send as trailers ([`CarriedTrailers`]), or from a trailers-only head (the upstream's error, or the
//!   gateway's), else `0`.
//!
//! JSON messages (`application/grpc-web(-text)+json`, or one bare message each way with
//! `application/json`) are transcoded with the types of the method the path names, from the `.proto`
//! file `proto` names, compiled when the plugin is built (a file that does not compile is logged then, and
//! its JSON requests get 500, as Kong's fail). Without `proto` they get Kong's 400.

mod codec;
mod proto;
#[cfg(test)]
mod tests;

use crate::builtin::grpc_proto;
use crate::ctx::RequestCtx;
use crate::grpc_hooks::{CarriedTrailers, UpstreamPath};
use crate::plugin::{Flow, Plugin, Registered};
use crate::registry::{typed_config, BuildCtx, Builtin};
use crate::response::PluginResponse;
use bytes::{Bytes, BytesMut};
use codec::Mode;
use http::header::{ACCESS_CONTROL_ALLOW_ORIGIN, CONTENT_LENGTH, CONTENT_TYPE, TE};
use http::{HeaderMap, HeaderValue, Method};
use proto::Methods;
use serde::Deserialize;
use sluice_model::schema::{Field, Schema};
use std::sync::Arc;

/// The plugin's config, after schema validation.
#[derive(Debug, Deserialize)]
struct Config {
    /// A `.proto` file (path on the node) whose methods' types JSON requests are transcoded with.
    proto: Option<String>,
    /// Send the path as the upstream would get it over HTTP (route's `strip_path`, service's `path`).
    pass_stripped_path: Option<bool>,
    /// `Access-Control-Allow-Origin` of every response.
    allow_origin_header: String,
}

fn schema() -> Schema {
    Schema::new(vec![
        ("proto", Field::string()),
        ("pass_stripped_path", Field::boolean()),
        ("allow_origin_header", Field::string().default("*")),
    ])
}

pub fn builtin() -> Builtin {
    Builtin::new("grpc-web", 3, schema(), build)
}

fn build(_: &BuildCtx<'_>, entity: &sluice_model::Plugin) -> Result<Arc<dyn Plugin>, String> {
    let config: Config = typed_config(entity)?;
    let allow_origin = HeaderValue::from_str(&config.allow_origin_header)
        .map_err(|_| "allow_origin_header is not a valid header value".to_string())?;
    let methods = config.proto.as_deref().map(Methods::load);
    Ok(Registered::new(
        "grpc-web",
        GrpcWeb {
            allow_origin,
            methods,
            pass_stripped_path: config.pass_stripped_path == Some(true),
        },
    )
    .access(GrpcWeb::access)
    .header_filter(GrpcWeb::header_filter)
    .body_filter(GrpcWeb::body_filter)
    .reads_request_body(true)
    .build())
}

/// One translated call, kept from `access` to the last `body_filter`.
#[derive(Clone)]
struct Call {
    mode: Mode,
    /// `grpc-status`/`grpc-message` of a trailers-only head (the upstream's error, or the gateway's).
    head_status: HeaderMap,
    carried: CarriedTrailers,
}

struct GrpcWeb {
    allow_origin: HeaderValue,
    /// The `proto`'s methods (JSON transcoding).
    methods: Option<Arc<Methods>>,
    pass_stripped_path: bool,
}

impl GrpcWeb {
    /// Kong's answer to a preflight.
    fn preflight(&self) -> PluginResponse {
        let text = "application/grpc-web-text+proto";
        let allowed = "content-type,x-grpc-web,x-user-agent";
        grpc_proto::preflight(text, self.allow_origin.clone(), "POST", allowed)
    }

    fn access(&self, ctx: &mut RequestCtx<'_>) -> Flow {
        let origin = self.allow_origin.clone();
        ctx.response_headers
            .insert(ACCESS_CONTROL_ALLOW_ORIGIN, origin);
        if ctx.request.method == Method::OPTIONS {
            return Flow::Respond(self.preflight());
        }
        if self.pass_stripped_path {
            if let Some(UpstreamPath(path)) = ctx.plugin_data.remove::<UpstreamPath>() {
                let uri = &ctx.request.uri;
                let target = match uri.query() {
                    Some(q) => format!("{path}?{q}"),
                    None => path,
                };
                ctx.request.uri = grpc_proto::with_target(uri, &target);
            }
        }
        let content_type = ctx.request.headers.get(CONTENT_TYPE);
        let methods = self.methods.as_deref();
        let translated = Mode::of(content_type, methods, ctx.request.uri.path()).and_then(|mode| {
            let body = mode.upstream(ctx.body.take().unwrap_or_default())?;
            Ok((mode, body))
        });
        let (mode, body) = match translated {
            Ok(done) => done,
            Err(refused) => {
                tracing::error!("grpc-web: {}", refused.message());
                return Flow::Respond(refused.answer());
            }
        };
        let headers = &mut ctx.request.headers;
        let grpc = HeaderValue::from_static("application/grpc");
        headers.insert(CONTENT_TYPE, grpc);
        headers.insert(TE, HeaderValue::from_static("trailers"));
        headers.insert(CONTENT_LENGTH, HeaderValue::from(body.len()));
        ctx.body = Some(body);
        let carried = CarriedTrailers::default();
        ctx.plugin_data.insert(carried.clone());
        ctx.plugin_data.insert(Call {
            mode,
            head_status: HeaderMap::new(),
            carried,
        });
        Flow::Continue
    }

    fn header_filter(&self, ctx: &mut RequestCtx<'_>, response: &mut http::response::Parts) {
        let Some(call) = ctx.plugin_data.get_mut::<Call>() else {
            return;
        };
        for name in ["grpc-status", "grpc-message"] {
            if let Some(v) = response.headers.get(name) {
                call.head_status.insert(name, v.clone());
            }
        }
        response
            .headers
            .insert(CONTENT_TYPE, call.mode.mime.clone());
    }

    fn body_filter(&self, ctx: &mut RequestCtx<'_>, chunk: &mut Bytes, eof: bool) {
        let Some(call) = ctx.plugin_data.get_mut::<Call>() else {
            return;
        };
        let piece = call.mode.downstream(std::mem::take(chunk));
        if !eof {
            *chunk = piece;
            return;
        }
        let trailers = call.carried.get().unwrap_or(&call.head_status);
        let frame = call.mode.trailer_frame(trailers);
        let mut last = BytesMut::with_capacity(piece.len() + frame.len());
        last.extend_from_slice(&piece);
        last.extend_from_slice(&frame);
        *chunk = last.freeze();
    }
}
