//! `request-transformer` (priority 801): edits the request before it is proxied — headers, query string,
//! body (JSON and `x-www-form-urlencoded`), method and upstream path.
//!
//! Kong's order: the path (`replace.uri`), the method, headers, body, query string; within each, `remove`,
//! `rename`, `replace` (only what is present), `add` (only what is absent), `append` (makes lists). Values may
//! use the templates of [`super::transform::template`]. The body is buffered only when a body transform (or
//! a `http_method` that moves a form body into the query) is configured.

mod body;
mod ops;
#[cfg(test)]
mod tests;

use super::transform::{self, form, template};
use crate::ctx::RequestCtx;
use crate::plugin::{Flow, Plugin, Registered};
use crate::registry::{typed_config, BuildCtx, Builtin};
use http::header::HOST;
use http::{HeaderMap, Method};
use ops::{HeaderOps, ParamOps};
use serde::Deserialize;
use serde_json::{Map, Value};
use sluice_model::schema::{Field, Schema};
use std::sync::Arc;

/// One of `remove` / `rename` / `replace` / `add` / `append`.
#[derive(Debug, Deserialize)]
struct Lists {
    body: Vec<String>,
    headers: Vec<String>,
    querystring: Vec<String>,
    /// `replace.uri` only: the new upstream path.
    #[serde(default)]
    uri: Option<String>,
}

/// The plugin's config, after schema validation.
#[derive(Debug, Deserialize)]
struct Config {
    /// The method sent upstream (`GET` also moves a form body into the query, as in Kong).
    http_method: Option<String>,
    remove: Lists,
    rename: Lists,
    replace: Lists,
    add: Lists,
    append: Lists,
}

/// Kong's `body`/`querystring` entries (`check_for_value`): `name:value`, the value not empty.
fn key_values() -> Field {
    transform::list(Field::string().check(|v| {
        let s = v.as_str().unwrap_or_default();
        let (name, value) = s.split_once(':').unwrap_or((s, ""));
        match (name, value.trim_start_matches(':')) {
            ("", _) => Err(format!("invalid value: {s}")),
            (_, "") => Err(format!("key '{name}' has no value")),
            _ => Ok(()),
        }
    }))
}

fn record(headers: Field, values: Field, uri: bool) -> Field {
    let mut fields = vec![
        ("body", values.clone()),
        ("headers", headers),
        ("querystring", values),
    ];
    if uri {
        fields.push(("uri", Field::string()));
    }
    Field::record(Schema::new(fields))
}

fn check_method(v: &Value) -> Result<(), String> {
    let s = v.as_str().unwrap_or_default();
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_uppercase()) {
        Ok(())
    } else {
        Err(format!("invalid value: {s}"))
    }
}

fn schema() -> Schema {
    Schema::new(vec![
        ("http_method", Field::string().check(check_method)),
        (
            "remove",
            record(transform::header_names(), transform::names(), false),
        ),
        (
            "rename",
            record(transform::header_renames(), key_values(), false),
        ),
        (
            "replace",
            record(transform::header_pairs(), key_values(), true),
        ),
        (
            "add",
            record(transform::header_pairs(), key_values(), false),
        ),
        (
            "append",
            record(transform::header_pairs(), key_values(), false),
        ),
    ])
}

pub fn builtin() -> Builtin {
    Builtin::new("request-transformer", 801, schema(), build)
}

fn build(_: &BuildCtx<'_>, entity: &sluice_model::Plugin) -> Result<Arc<dyn Plugin>, String> {
    let c: Config = typed_config(entity)?;
    let pick = |f: fn(&Lists) -> &Vec<String>| {
        [&c.remove, &c.rename, &c.replace, &c.add, &c.append].map(f)
    };
    let method = match &c.http_method {
        Some(m) => Some(Method::from_bytes(m.as_bytes()).map_err(|e| e.to_string())?),
        None => None,
    };
    let uri = c.replace.uri.clone().filter(|u| !u.is_empty());
    let templated = [&c.replace, &c.add, &c.append]
        .iter()
        .flat_map(|l| l.body.iter().chain(&l.headers).chain(&l.querystring))
        .chain(uri.iter())
        .any(|v| template::is_template(v));
    Ok(register(RequestTransformer {
        headers: HeaderOps::new(pick(|l| &l.headers)),
        query: ParamOps::new(pick(|l| &l.querystring)),
        body: ParamOps::new(pick(|l| &l.body)),
        uri,
        method,
        templated,
    }))
}

struct RequestTransformer {
    headers: HeaderOps,
    query: ParamOps,
    body: ParamOps,
    uri: Option<String>,
    method: Option<Method>,
    /// Some value is a `$(...)` template.
    templated: bool,
}

impl RequestTransformer {
    /// `GET`/`HEAD`/`TRACE` move a form body's fields into the query string, as Kong does.
    fn moves_form_to_query(&self) -> bool {
        self.method
            .as_ref()
            .is_some_and(|m| [Method::GET, Method::HEAD, Method::TRACE].contains(m))
    }

    fn transform_method(&self, ctx: &mut RequestCtx<'_>, query: &mut Map<String, Value>) -> bool {
        let Some(method) = &self.method else {
            return false;
        };
        ctx.request.method = method.clone();
        if !self.moves_form_to_query() || body::kind(&ctx.request.headers) != Some(body::Kind::Form)
        {
            return false;
        }
        body::form_into_query(ctx.body.as_deref(), query);
        true
    }

    /// Sets the path and/or query of the request URI.
    fn set_uri(ctx: &mut RequestCtx<'_>, path: Option<&str>, query: Option<&str>) {
        let path = path.unwrap_or(ctx.request.uri.path());
        let query = query.or(ctx.request.uri.query()).unwrap_or_default();
        let target = if query.is_empty() {
            path.to_string()
        } else {
            format!("{path}?{query}")
        };
        match target.parse() {
            Ok(uri) => ctx.request.uri = uri,
            Err(_) => tracing::warn!(%target, "request-transformer: not a valid request target"),
        }
    }
}

impl RequestTransformer {
    fn needs_request_body(&self) -> bool {
        !self.body.is_empty() || self.moves_form_to_query()
    }

    fn access(&self, ctx: &mut RequestCtx<'_>) -> Flow {
        let reads_query = !self.query.is_empty() || self.templated || self.moves_form_to_query();
        let mut query = match ctx.request.uri.query() {
            Some(q) if reads_query => form::parse(q),
            _ => Map::new(),
        };
        // Templates read the request as it came in; copied only when some value is a template.
        let (original_headers, original_query) = if self.templated {
            (ctx.request.headers.clone(), query.clone())
        } else {
            (HeaderMap::new(), Map::new())
        };
        let env = template::Env {
            headers: &original_headers,
            query: &original_query,
            captures: ctx.captures,
        };
        let path = self.uri.as_deref().map(|u| template::render(u, &env));
        let moved = self.transform_method(ctx, &mut query);
        let host = ctx.request.headers.get(HOST).cloned();
        self.headers.apply(&mut ctx.request.headers, &env);
        body::transform(&self.body, ctx, &env);
        let query_changed = self.query.apply(&mut query, true, &env) || moved;
        let new_query = (query_changed || !self.query.is_empty()).then(|| form::encode(&query));
        if path.is_some() || new_query.is_some() {
            Self::set_uri(ctx, path.as_deref(), new_query.as_deref());
        }
        if let Some(host) = host {
            // Kong never lets remove/rename drop the Host header.
            ctx.request.headers.entry(HOST).or_insert(host);
        }
        Flow::Continue
    }
}

/// This plugin's phases: each handler is registered here, next to where it is implemented.
fn register(plugin: RequestTransformer) -> Arc<dyn Plugin> {
    let reads_body = plugin.needs_request_body();
    Registered::new("request-transformer", plugin)
        .access(RequestTransformer::access)
        .reads_request_body(reads_body)
        .build()
}
