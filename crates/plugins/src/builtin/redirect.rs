//! `redirect` (priority 779): answers every request with `status_code` (301) and a `Location` of
//! `location`; with `keep_incoming_path`, the request's path and query replace the location's. The body is
//! Kong's: the text `redirecting`.

use crate::ctx::RequestCtx;
use crate::plugin::{Flow, Plugin, Registered};
use crate::registry::{typed_config, BuildCtx, Builtin};
use crate::response::PluginResponse;
use bytes::Bytes;
use http::{HeaderValue, StatusCode, Uri};
use serde::Deserialize;
use serde_json::Value;
use sluice_model::schema::{Field, Schema};
use std::sync::Arc;

#[derive(Debug, Deserialize)]
struct Config {
    status_code: u16,
    location: String,
    keep_incoming_path: bool,
}

/// `location` must be an absolute URL (Kong's `typedefs.url`).
fn check_url(v: &Value) -> Result<(), String> {
    sluice_model::declarative::schemas::typedefs::url(v)?;
    let s = v.as_str().unwrap_or_default();
    match s.parse::<Uri>() {
        Ok(u) if u.scheme().is_some() && u.host().is_some() => Ok(()),
        _ => Err("missing host in url".into()),
    }
}

pub fn builtin() -> Builtin {
    let config = Schema::new(vec![
        (
            "status_code",
            Field::integer()
                .required()
                .default(301)
                .between(100.0, 599.0),
        ),
        ("location", Field::string().required().check(check_url)),
        ("keep_incoming_path", Field::boolean().default(false)),
    ]);
    Builtin::new("redirect", 779, config, build)
}

fn build(_: &BuildCtx<'_>, entity: &sluice_model::Plugin) -> Result<Arc<dyn Plugin>, String> {
    let config: Config = typed_config(entity)?;
    let status = StatusCode::from_u16(config.status_code).map_err(|e| e.to_string())?;
    let location: Uri = config
        .location
        .parse()
        .map_err(|e| format!("location: {e}"))?;
    // scheme://authority, what a kept incoming path is appended to.
    let origin = format!(
        "{}://{}",
        location.scheme_str().unwrap_or("http"),
        location.authority().map_or("", |a| a.as_str())
    );
    Ok(register(Redirect {
        status,
        fixed: HeaderValue::from_str(&config.location).map_err(|e| format!("location: {e}"))?,
        origin: config.keep_incoming_path.then_some(origin),
    }))
}

struct Redirect {
    status: StatusCode,
    /// `location` as configured.
    fixed: HeaderValue,
    /// Set with `keep_incoming_path`: the location's scheme and authority.
    origin: Option<String>,
}

impl Redirect {
    fn location(&self, request: &Uri) -> HeaderValue {
        let Some(origin) = &self.origin else {
            return self.fixed.clone();
        };
        let path = request.path_and_query().map_or("/", |p| p.as_str());
        HeaderValue::from_str(&format!("{origin}{path}")).unwrap_or_else(|_| self.fixed.clone())
    }
}

impl Redirect {
    fn access(&self, ctx: &mut RequestCtx<'_>) -> Flow {
        let mut resp = PluginResponse {
            status: self.status,
            headers: http::HeaderMap::new(),
            body: Bytes::from_static(b"redirecting"),
        };
        resp.headers
            .insert(http::header::LOCATION, self.location(&ctx.request.uri));
        Flow::Respond(resp)
    }
}

/// This plugin's phases: each handler is registered here, next to where it is implemented.
fn register(plugin: Redirect) -> Arc<dyn Plugin> {
    Registered::new("redirect", plugin)
        .access(Redirect::access)
        .build()
}

#[cfg(test)]
mod tests;
