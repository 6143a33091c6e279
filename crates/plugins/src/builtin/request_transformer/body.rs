//! Request bodies for request-transformer: which formats are edited, the edit itself, and Kong's move of form
//! fields into the query string when the method becomes `GET`.

use super::ops::ParamOps;
use crate::builtin::transform::{self, form, template};
use crate::ctx::RequestCtx;
use http::header::{CONTENT_LENGTH, CONTENT_TYPE, TRANSFER_ENCODING};
use http::{HeaderMap, HeaderValue};
use serde_json::{Map, Value};

/// The request body formats Kong's request-transformer edits.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Json,
    Form,
}

/// The body format by `Content-Type` (None: left alone, multipart included).
pub fn kind(headers: &HeaderMap) -> Option<Kind> {
    let ct = headers
        .get(CONTENT_TYPE)?
        .to_str()
        .ok()?
        .to_ascii_lowercase();
    if ct.contains("application/json") {
        Some(Kind::Json)
    } else if ct.contains("application/x-www-form-urlencoded") {
        Some(Kind::Form)
    } else {
        None
    }
}

/// Adds a form body's fields to `query` (a name already there becomes a list).
pub fn form_into_query(body: Option<&[u8]>, query: &mut Map<String, Value>) {
    let fields = body
        .map(|b| form::parse(&String::from_utf8_lossy(b)))
        .unwrap_or_default();
    for (name, value) in fields {
        let merged = match query.get_mut(&name).map(Value::take) {
            Some(prev) => match value {
                Value::Array(list) => list
                    .into_iter()
                    .fold(prev, |acc, v| transform::append_json(Some(acc), v)),
                v => transform::append_json(Some(prev), v),
            },
            None => value,
        };
        query.insert(name, merged);
    }
}

/// Applies `ops` to a JSON object or form body in `ctx.body`, and sets the new `Content-Length`. Invalid JSON
/// is left alone; an empty body only gets `add`/`append`, as in Kong.
pub fn transform(ops: &ParamOps, ctx: &mut RequestCtx<'_>, env: &template::Env<'_>) {
    if ops.is_empty() {
        return;
    }
    let Some(kind) = kind(&ctx.request.headers) else {
        return;
    };
    let body = ctx.body.clone().unwrap_or_default();
    let has_content = !body.is_empty();
    let new_body = match kind {
        Kind::Json => {
            let mut params = match serde_json::from_slice::<Value>(&body) {
                Ok(Value::Object(m)) => m,
                _ if !has_content => Map::new(),
                _ => return,
            };
            if !ops.apply(&mut params, has_content, env) {
                return;
            }
            Value::Object(params).to_string()
        }
        Kind::Form => {
            let mut params = form::parse(&String::from_utf8_lossy(&body));
            if !ops.apply(&mut params, has_content, env) {
                return;
            }
            form::encode(&params)
        }
    };
    ctx.request
        .headers
        .insert(CONTENT_LENGTH, HeaderValue::from(new_body.len()));
    ctx.request.headers.remove(TRANSFER_ENCODING);
    ctx.body = Some(new_body.into());
}
