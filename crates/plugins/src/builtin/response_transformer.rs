//! `response-transformer` (priority 800): edits the response headers and the keys of a JSON response body.
//!
//! Kong's order: `remove`, `rename`, `replace` (only what is present), `add` (only what is absent), `append`
//! (a header line more; for JSON a list). JSON values are strings unless `json_types` says `number` or
//! `boolean`. The body is rewritten only when a JSON transform is configured and the response's
//! `Content-Type` is `application/json`; then it is collected whole in `body_filter` and sent as one chunk,
//! without `Content-Length`.

mod json;
#[cfg(test)]
mod tests;

use super::transform;
use crate::ctx::RequestCtx;
use crate::plugin::{Plugin, Registered};
use crate::registry::{typed_config, BuildCtx, Builtin};
use bytes::{Bytes, BytesMut};
use http::header::{CONTENT_LENGTH, CONTENT_TYPE};
use http::HeaderName;
use json::JsonOps;
use serde::Deserialize;
use sluice_model::schema::{Field, Schema};
use std::sync::Arc;

/// One of `remove` / `rename` / `replace` / `add` / `append`.
#[derive(Debug, Deserialize)]
struct Lists {
    headers: Vec<String>,
    json: Vec<String>,
    /// The type of each `json` value by position: `string` (default), `number` or `boolean`.
    #[serde(default)]
    json_types: Vec<String>,
}

/// The plugin's config, after schema validation.
#[derive(Debug, Deserialize)]
struct Config {
    remove: Lists,
    rename: Lists,
    replace: Lists,
    add: Lists,
    append: Lists,
}

fn record(headers: Field, json: Field, typed: bool) -> Field {
    let mut fields = vec![("json", json), ("headers", headers)];
    if typed {
        fields.insert(
            1,
            (
                "json_types",
                transform::list(Field::string().one_of(&["boolean", "number", "string"])),
            ),
        );
    }
    Field::record(Schema::new(fields))
}

fn schema() -> Schema {
    let typed = || record(transform::header_pairs(), transform::colon_pairs(), true);
    Schema::new(vec![
        (
            "remove",
            record(transform::header_names(), transform::names(), false),
        ),
        (
            "rename",
            record(transform::header_renames(), transform::colon_pairs(), false),
        ),
        ("replace", typed()),
        ("add", typed()),
        ("append", typed()),
    ])
}

pub fn builtin() -> Builtin {
    Builtin::new("response-transformer", 800, schema(), build)
}

fn build(_: &BuildCtx<'_>, entity: &sluice_model::Plugin) -> Result<Arc<dyn Plugin>, String> {
    let c: Config = typed_config(entity)?;
    let header_pairs = |l: &Lists| -> Vec<(HeaderName, Option<String>)> {
        transform::pairs(&l.headers)
            .into_iter()
            .filter_map(|(n, v)| Some((transform::header_name(&n)?, v)))
            .collect()
    };
    let rename = header_pairs(&c.rename)
        .into_iter()
        .filter_map(|(o, n)| Some((o, transform::header_name(&n?)?)))
        .collect();
    let valued = |l: &Lists| {
        header_pairs(l)
            .into_iter()
            .filter_map(|(n, v)| Some((n, v?)))
            .collect()
    };
    Ok(register(ResponseTransformer {
        remove: header_pairs(&c.remove).into_iter().map(|p| p.0).collect(),
        rename,
        replace: valued(&c.replace),
        add: valued(&c.add),
        append: valued(&c.append),
        json: JsonOps::new(&c.remove, &c.rename, &c.replace, &c.add, &c.append),
    }))
}

struct ResponseTransformer {
    remove: Vec<HeaderName>,
    rename: Vec<(HeaderName, HeaderName)>,
    replace: Vec<(HeaderName, String)>,
    add: Vec<(HeaderName, String)>,
    append: Vec<(HeaderName, String)>,
    json: JsonOps,
}

/// The JSON body collected so far for this request (kept in the request's extensions between chunks).
#[derive(Clone, Default)]
struct Pending(BytesMut);

/// Kong's `is_json_body`: one of the comma-separated media types is `application/json`.
fn is_json(headers: &http::HeaderMap) -> bool {
    headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| {
            ct.split(',').any(|t| {
                let essence = t.split(';').next().unwrap_or("").trim();
                essence.eq_ignore_ascii_case("application/json")
            })
        })
}

impl ResponseTransformer {
    fn header_filter(&self, ctx: &mut RequestCtx<'_>, response: &mut http::response::Parts) {
        let headers = &mut response.headers;
        let json_body = !self.json.is_empty() && is_json(headers);
        for name in &self.remove {
            headers.remove(name);
        }
        for (old, new) in &self.rename {
            transform::rename_header(headers, old, new);
        }
        for (name, value) in &self.replace {
            if headers.contains_key(name) {
                transform::set_header(headers, name, value);
            }
        }
        for (name, value) in &self.add {
            if !headers.contains_key(name) {
                transform::set_header(headers, name, value);
            }
        }
        for (name, value) in &self.append {
            transform::append_header(headers, name, value);
        }
        if json_body {
            headers.remove(CONTENT_LENGTH);
            ctx.request.extensions.insert(Pending::default());
        }
    }

    fn body_filter(&self, ctx: &mut RequestCtx<'_>, chunk: &mut Bytes, eof: bool) {
        let Some(pending) = ctx.request.extensions.get_mut::<Pending>() else {
            return;
        };
        pending.0.extend_from_slice(chunk);
        *chunk = Bytes::new();
        if !eof {
            return;
        }
        let whole = std::mem::take(&mut pending.0).freeze();
        ctx.request.extensions.remove::<Pending>();
        *chunk = match self.json.transform(&whole) {
            Some(body) => body.into(),
            None => {
                tracing::warn!("response-transformer: body transform failed: not a JSON body");
                whole
            }
        };
    }
}

/// This plugin's phases: each handler is registered here, next to where it is implemented.
fn register(plugin: ResponseTransformer) -> Arc<dyn Plugin> {
    // The body is filtered only when the config has JSON transforms: a header-only config keeps the
    // upstream's body (and its Content-Length) streaming through untouched.
    let filters_body = !plugin.json.is_empty();
    let registered = Registered::new("response-transformer", plugin)
        .header_filter(ResponseTransformer::header_filter);
    match filters_body {
        true => registered.body_filter(ResponseTransformer::body_filter),
        false => registered,
    }
    .build()
}
