//! `cors` (priority 2000): Cross-Origin Resource Sharing, as Kong does it.
//!
//! A preflight (`OPTIONS` with `Origin` and `Access-Control-Request-Method`) is answered `200` by the gateway
//! with the `Access-Control-Allow-*` headers, unless `preflight_continue` hands it to the upstream untouched.
//! Every other response gets `Access-Control-Allow-Origin` (and `-Credentials`, `-Expose-Headers`) in
//! `header_filter`. Origins are exact (`https://a.example`, compared after dropping default ports), `*`, or
//! regexes (anything with a character outside `[A-Za-z0-9.:/-]`), anchored at both ends and matched against
//! the request origin's host — or its `scheme://host:port` when the regex contains a `:`.

mod origins;
#[cfg(test)]
mod tests;

use crate::ctx::RequestCtx;
use crate::plugin::{Flow, Plugin, Registered};
use crate::registry::{typed_config, BuildCtx, Builtin};
use crate::response::PluginResponse;
use http::header::{
    ACCESS_CONTROL_ALLOW_CREDENTIALS, ACCESS_CONTROL_ALLOW_HEADERS, ACCESS_CONTROL_ALLOW_METHODS,
    ACCESS_CONTROL_ALLOW_ORIGIN, ACCESS_CONTROL_EXPOSE_HEADERS, ACCESS_CONTROL_MAX_AGE,
    ACCESS_CONTROL_REQUEST_HEADERS, ACCESS_CONTROL_REQUEST_METHOD, ORIGIN, VARY,
};
use http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode};
use origins::{Allowed, Origins};
use serde::Deserialize;
use serde_json::Value;
use sluice_model::schema::{Field, Schema};
use std::sync::Arc;

const METHODS: &[&str] = &[
    "GET", "HEAD", "PUT", "PATCH", "POST", "DELETE", "OPTIONS", "TRACE", "CONNECT",
];

const ALLOW_PRIVATE_NETWORK: HeaderName =
    HeaderName::from_static("access-control-allow-private-network");
const REQUEST_PRIVATE_NETWORK: HeaderName =
    HeaderName::from_static("access-control-request-private-network");

/// The plugin's config, after schema validation.
#[derive(Debug, Deserialize)]
struct Config {
    /// Allowed origins: exact, `*` or regexes. None or empty allows every origin.
    origins: Option<Vec<String>>,
    /// `Access-Control-Allow-Headers` of a preflight; when unset, the request's
    /// `Access-Control-Request-Headers` is echoed.
    headers: Option<Vec<String>>,
    /// `Access-Control-Expose-Headers` on non-preflight responses.
    exposed_headers: Option<Vec<String>>,
    /// `Access-Control-Allow-Methods` of a preflight.
    methods: Vec<String>,
    /// `Access-Control-Max-Age` of a preflight, in seconds.
    max_age: Option<f64>,
    /// Send `Access-Control-Allow-Credentials: true` (with the request's origin instead of `*`).
    credentials: bool,
    /// Answer `Access-Control-Request-Private-Network: true` with `Access-Control-Allow-Private-Network`.
    private_network: bool,
    /// Proxy preflight requests to the upstream instead of answering them.
    preflight_continue: bool,
    /// Add the CORS headers even when the request has no `Origin` (Kong 3.10; true when unset).
    #[serde(default = "yes")]
    allow_origin_absent: bool,
}

fn yes() -> bool {
    true
}

fn check_origin(v: &Value) -> Result<(), String> {
    let s = v.as_str().unwrap_or_default();
    if s == "*" || regex::Regex::new(s).is_ok() {
        Ok(())
    } else {
        Err(format!("'{s}' is not a valid regex"))
    }
}

fn schema() -> Schema {
    Schema::new(vec![
        ("origins", Field::array(Field::string().check(check_origin))),
        ("headers", Field::array(Field::string())),
        ("exposed_headers", Field::array(Field::string())),
        (
            "methods",
            Field::array(Field::string().one_of(METHODS)).default(serde_json::json!(METHODS)),
        ),
        ("max_age", Field::number()),
        ("credentials", Field::boolean().default(false)),
        ("private_network", Field::boolean().default(false)),
        ("preflight_continue", Field::boolean().default(false)),
        // Kong 3.10's: stored and exported only when given, so an export loads in Kong 3.9.
        ("allow_origin_absent", Field::boolean().only_when_set()),
    ])
}

pub fn builtin() -> Builtin {
    Builtin::new("cors", 2000, schema(), build).no_consumer()
}

/// A comma-joined list as one header value (None when empty or invalid).
fn joined(list: Option<&[String]>) -> Option<HeaderValue> {
    let list = list.filter(|l| !l.is_empty())?;
    HeaderValue::from_str(&list.join(",")).ok()
}

fn build(_: &BuildCtx<'_>, entity: &sluice_model::Plugin) -> Result<Arc<dyn Plugin>, String> {
    let config: Config = typed_config(entity)?;
    let origins = Origins::new(config.origins.as_deref().unwrap_or_default())?;
    let methods = if config.methods.is_empty() {
        METHODS.join(",")
    } else {
        config.methods.join(",")
    };
    let max_age = config.max_age.map(|n| {
        let text = if n.fract() == 0.0 && n.abs() < 1e15 {
            format!("{}", n as i64)
        } else {
            n.to_string()
        };
        HeaderValue::from_str(&text).unwrap_or(HeaderValue::from_static("0"))
    });
    Ok(register(Cors {
        origins,
        allow_headers: joined(config.headers.as_deref()),
        expose_headers: joined(config.exposed_headers.as_deref()),
        methods: HeaderValue::from_str(&methods).map_err(|e| e.to_string())?,
        max_age,
        config,
    }))
}

struct Cors {
    config: Config,
    origins: Origins,
    allow_headers: Option<HeaderValue>,
    expose_headers: Option<HeaderValue>,
    methods: HeaderValue,
    max_age: Option<HeaderValue>,
}

/// `Origin` when present and not empty.
fn request_origin<'r>(ctx: &'r RequestCtx<'_>) -> Option<&'r HeaderValue> {
    ctx.request.headers.get(ORIGIN).filter(|v| !v.is_empty())
}

/// A CORS preflight: `OPTIONS` with an `Origin` and `Access-Control-Request-Method`.
fn is_preflight(ctx: &RequestCtx<'_>) -> bool {
    ctx.request.method == Method::OPTIONS
        && request_origin(ctx).is_some()
        && ctx
            .request
            .headers
            .contains_key(ACCESS_CONTROL_REQUEST_METHOD)
}

impl Cors {
    /// Kong's `configure_origin` + `configure_credentials` on `headers`. In `header_filter` the `Vary: Origin`
    /// is added to the upstream's own `Vary`; in a preflight it is set.
    fn origin_headers(
        &self,
        origin: Option<&HeaderValue>,
        headers: &mut HeaderMap,
        add_vary: bool,
    ) {
        let vary = |headers: &mut HeaderMap| {
            let v = HeaderValue::from_static("Origin");
            if add_vary {
                headers.append(VARY, v);
            } else {
                headers.insert(VARY, v);
            }
        };
        let allowed = self.origins.check(origin.and_then(|o| o.to_str().ok()));
        if allowed.varies() {
            vary(headers);
        }
        let allow_all = matches!(allowed, Allowed::All { .. });
        match allowed {
            Allowed::All { .. } => {
                headers.insert(ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*"));
            }
            Allowed::Origin(v) => {
                headers.insert(ACCESS_CONTROL_ALLOW_ORIGIN, v);
            }
            Allowed::None => {
                headers.remove(ACCESS_CONTROL_ALLOW_ORIGIN);
            }
        }
        if !self.config.credentials {
            return;
        }
        let yes = HeaderValue::from_static("true");
        if !allow_all {
            headers.insert(ACCESS_CONTROL_ALLOW_CREDENTIALS, yes);
        } else if let Some(origin) = origin {
            // `*` may not be combined with credentials: echo the request's origin instead.
            vary(headers);
            headers.insert(ACCESS_CONTROL_ALLOW_ORIGIN, origin.clone());
            headers.insert(ACCESS_CONTROL_ALLOW_CREDENTIALS, yes);
        }
    }

    fn preflight(&self, ctx: &RequestCtx<'_>) -> PluginResponse {
        let mut headers = HeaderMap::new();
        self.origin_headers(request_origin(ctx), &mut headers, false);
        let requested = ctx.request.headers.get(ACCESS_CONTROL_REQUEST_HEADERS);
        if let Some(allow) = self.allow_headers.as_ref().or(requested) {
            headers.insert(ACCESS_CONTROL_ALLOW_HEADERS, allow.clone());
        }
        headers.insert(ACCESS_CONTROL_ALLOW_METHODS, self.methods.clone());
        if let Some(age) = &self.max_age {
            headers.insert(ACCESS_CONTROL_MAX_AGE, age.clone());
        }
        let private = ctx.request.headers.get(REQUEST_PRIVATE_NETWORK);
        if self.config.private_network && private.is_some_and(|v| v == "true") {
            headers.insert(ALLOW_PRIVATE_NETWORK, HeaderValue::from_static("true"));
        }
        PluginResponse {
            status: StatusCode::OK,
            headers,
            body: bytes::Bytes::new(),
        }
    }
}

impl Cors {
    fn access(&self, ctx: &mut RequestCtx<'_>) -> Flow {
        if !is_preflight(ctx) || self.config.preflight_continue {
            return Flow::Continue;
        }
        Flow::Respond(self.preflight(ctx))
    }

    fn header_filter(&self, ctx: &mut RequestCtx<'_>, response: &mut http::response::Parts) {
        // A preflight was answered in `access` (or handed to the upstream, whose answer is left alone).
        if is_preflight(ctx) {
            return;
        }
        let origin = request_origin(ctx);
        if origin.is_none() && !self.config.allow_origin_absent {
            return;
        }
        self.origin_headers(origin, &mut response.headers, true);
        if let Some(expose) = &self.expose_headers {
            response
                .headers
                .insert(ACCESS_CONTROL_EXPOSE_HEADERS, expose.clone());
        }
    }
}

/// This plugin's phases: each handler is registered here, next to where it is implemented.
fn register(plugin: Cors) -> Arc<dyn Plugin> {
    Registered::new("cors", plugin)
        .access(Cors::access)
        .header_filter(Cors::header_filter)
        .build()
}
