//! Every way an admin request can fail, and the one function that turns a failure into Kong's response.
//!
//! Kong answers with `{"message": ...}` for plain HTTP errors (404, 405, 429, 413, 500) and with
//! `{"code", "name", "message"[, "fields"]}` for DAO errors (codes 7, 9, 11, 12, 14). Handlers return
//! [`ApiError`] and never build error bodies themselves, so the shapes stay in one place.

use crate::reply::{self, Reply};
use http::{HeaderValue, StatusCode};
use serde_json::{json, Map, Value};
use sluice_model::writes::WriteError;

/// Kong's DAO error codes.
const SCHEMA_VIOLATION: u32 = 2;
const PRIMARY_KEY_VIOLATION: u32 = 3;
const FOREIGN_KEY_VIOLATION: u32 = 4;
const UNIQUE_VIOLATION: u32 = 5;
const NOT_FOUND: u32 = 6;
const INVALID_OFFSET: u32 = 7;
const INVALID_SIZE: u32 = 9;
const INVALID_OPTIONS: u32 = 11;
const OPERATION_UNSUPPORTED: u32 = 12;
const DECLARATIVE_CONFIG: u32 = 14;

/// Seconds a client should wait before retrying a `POST /config` refused because another load runs.
const BUSY_RETRY_AFTER: &str = "1";

/// The body of a code-14 error.
#[derive(Debug, Clone, PartialEq)]
pub struct Invalid {
    /// Kong's nested `fields` object.
    pub fields: Value,
    pub message: String,
    /// `flattened_errors`, present with `?flatten_errors=1`.
    pub flattened: Option<Value>,
}

/// A failed admin request.
#[derive(Debug, Clone, PartialEq)]
pub enum ApiError {
    /// 404 `{"message":"Not found"}`: unknown path, or no entity with that id or endpoint key.
    NotFound,
    /// 405 `{"message":"Method not allowed"}`: the path exists but not for this method.
    MethodNotAllowed,
    /// 405, code 12: an entity write, which DB-less mode refuses; the message names the operation.
    Unsupported(String),
    /// 400, code 9: a `size` that is not an integer in 1..=1000.
    InvalidSize(String),
    /// 400, code 7: an `offset` this node did not issue (the offending value).
    InvalidOffset(String),
    /// 400, code 11: a bad list option, e.g. `tags` mixing `,` and `/`.
    InvalidOption {
        option: &'static str,
        message: String,
    },
    /// 400 `{"message": ...}`: a request Kong rejects without a DAO code (empty `POST /config`, ...).
    BadRequest(String),
    /// 400, code 14: the declarative config is invalid (boxed: it is much larger than the other variants).
    Declarative(Box<Invalid>),
    /// 429 with `Retry-After`: another config load is running.
    Busy,
    /// 413: the request body or the config does not fit.
    TooLarge(String),
    /// 408 with `Connection: close`: the client sent no more of its body within `client_body_timeout`.
    TimedOut,
    /// 500; the detail is logged, never sent.
    Internal(String),
    /// A refused entity write (DB mode): Kong's codes 2 to 6, or 503 when the database is down.
    Write(WriteError),
}

impl ApiError {
    /// Code 14 for a body that is not a declarative document at all (bad JSON/YAML, not an object).
    /// Kong reports it as `fields: {"error": ...}` and a message embedding that table.
    pub fn unparsable(reason: &str) -> ApiError {
        ApiError::Declarative(Box::new(Invalid {
            fields: json!({ "error": reason }),
            message: format!(
                "declarative config is invalid: {{error={}}}",
                lua_quote(reason)
            ),
            flattened: None,
        }))
    }

    /// The HTTP status Kong uses for this error.
    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::NotFound => StatusCode::NOT_FOUND,
            ApiError::MethodNotAllowed | ApiError::Unsupported(_) => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::InvalidSize(_)
            | ApiError::InvalidOffset(_)
            | ApiError::InvalidOption { .. }
            | ApiError::BadRequest(_)
            | ApiError::Declarative(_) => StatusCode::BAD_REQUEST,
            ApiError::Busy => StatusCode::TOO_MANY_REQUESTS,
            ApiError::TooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::TimedOut => StatusCode::REQUEST_TIMEOUT,
            ApiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
            ApiError::Write(e) => match e {
                WriteError::Unique { .. } => StatusCode::CONFLICT,
                WriteError::NotFound => StatusCode::NOT_FOUND,
                WriteError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
                WriteError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
                _ => StatusCode::BAD_REQUEST,
            },
        }
    }

    /// Kong's response for this error.
    pub fn into_reply(self) -> Reply {
        let status = self.status();
        match self {
            ApiError::NotFound => reply::message(status, "Not found"),
            ApiError::MethodNotAllowed => reply::message(status, "Method not allowed"),
            ApiError::Unsupported(msg) => coded(
                status,
                OPERATION_UNSUPPORTED,
                "operation unsupported",
                msg,
                None,
            ),
            ApiError::InvalidSize(msg) => coded(status, INVALID_SIZE, "invalid size", msg, None),
            ApiError::InvalidOffset(offset) => {
                let msg = format!("'{offset}' is not a valid offset: bad base64 encoding");
                coded(status, INVALID_OFFSET, "invalid offset", msg, None)
            }
            ApiError::InvalidOption { option, message } => {
                let msg = format!("invalid option ({option}: {message})");
                let mut fields = Map::new();
                fields.insert(option.to_string(), Value::String(message));
                let fields = Some(Value::Object(fields));
                coded(status, INVALID_OPTIONS, "invalid options", msg, fields)
            }
            ApiError::BadRequest(msg) | ApiError::TooLarge(msg) => reply::message(status, &msg),
            ApiError::Declarative(invalid) => {
                let Invalid {
                    fields,
                    message,
                    flattened,
                } = *invalid;
                let mut body = json!({
                    "code": DECLARATIVE_CONFIG,
                    "name": "invalid declarative configuration",
                    "message": message,
                    "fields": fields,
                });
                if let Some(flat) = flattened {
                    body["flattened_errors"] = flat;
                }
                reply::json(status, &body)
            }
            ApiError::TimedOut => {
                let mut r = reply::message(status, "Request timeout");
                r.headers_mut()
                    .insert(http::header::CONNECTION, HeaderValue::from_static("close"));
                r
            }
            ApiError::Busy => {
                let mut r = reply::message(status, "Currently loading previous configuration");
                r.headers_mut().insert(
                    http::header::RETRY_AFTER,
                    HeaderValue::from_static(BUSY_RETRY_AFTER),
                );
                r
            }
            ApiError::Internal(detail) | ApiError::Write(WriteError::Internal(detail)) => {
                tracing::error!(error = %detail, "admin request failed");
                reply::message(status, "An unexpected error occurred")
            }
            ApiError::Write(e) => write_error(status, e),
        }
    }
}

/// Kong's body for a refused entity write.
fn write_error(status: StatusCode, e: WriteError) -> Reply {
    match e {
        WriteError::Schema(errors) => {
            let mut fields = Value::Object(Map::new());
            let mut parts = Vec::new();
            for err in &errors {
                parts.push(format!("{}: {}", err.field, err.message));
                nest(&mut fields, &err.field, &err.message);
            }
            let message = match parts.len() {
                1 => format!("schema violation ({})", parts[0]),
                n => format!("{n} schema violations ({})", parts.join("; ")),
            };
            coded(
                status,
                SCHEMA_VIOLATION,
                "schema violation",
                message,
                Some(fields),
            )
        }
        WriteError::PrimaryKey(msg) => coded(
            status,
            PRIMARY_KEY_VIOLATION,
            "primary key violation",
            msg,
            None,
        ),
        WriteError::ForeignKey { message, fields } => coded(
            status,
            FOREIGN_KEY_VIOLATION,
            "foreign key violation",
            message,
            Some(fields),
        ),
        WriteError::Unique { message, fields } => coded(
            status,
            UNIQUE_VIOLATION,
            "unique constraint violation",
            message,
            Some(fields),
        ),
        WriteError::NotFound => coded(status, NOT_FOUND, "not found", "Not found".into(), None),
        WriteError::Unavailable(msg) => reply::message(status, &msg),
        WriteError::Internal(_) => reply::message(status, "An unexpected error occurred"),
    }
}

/// Sets `message` at dotted `path` (`config.minute`) in `fields`, as Kong nests field errors; an
/// `@entity` key holds the list of every entity check's message, as Kong's does.
fn nest(fields: &mut Value, path: &str, message: &str) {
    let mut at = fields;
    let mut parts = path.split('.').peekable();
    while let Some(part) = parts.next() {
        if !at.is_object() {
            *at = Value::Object(Map::new());
        }
        let Value::Object(map) = at else { return };
        if parts.peek().is_none() {
            match map.get_mut(part) {
                Some(Value::Array(list)) if part == "@entity" => list.push(message.into()),
                _ if part == "@entity" => {
                    map.insert(part.to_string(), json!([message]));
                }
                _ => {
                    map.insert(part.to_string(), message.into());
                }
            }
            return;
        }
        at = map
            .entry(part.to_string())
            .or_insert_with(|| Value::Object(Map::new()));
    }
}

/// `{"code", "name", "message"[, "fields"]}`: Kong's DAO error body (no `fields` key when there are none).
fn coded(
    status: StatusCode,
    code: u32,
    name: &str,
    message: String,
    fields: Option<Value>,
) -> Reply {
    let mut body = json!({ "code": code, "name": name, "message": message });
    if let Some(fields) = fields {
        body["fields"] = fields;
    }
    reply::json(status, &body)
}

/// A string as Lua's pretty-printer writes it: double-quoted, with `\` and `"` escaped.
fn lua_quote(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

#[cfg(test)]
mod tests;
