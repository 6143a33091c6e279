//! The one place admin results become HTTP responses: JSON bodies, Kong's error shapes, common headers.

use bytes::Bytes;
use http::{HeaderValue, Response, StatusCode};
use http_body_util::Full;
use serde_json::{json, Value};

pub type Reply = Response<Full<Bytes>>;

/// A JSON response.
pub fn json(status: StatusCode, body: &Value) -> Reply {
    let mut resp = Response::new(Full::new(Bytes::from(body.to_string())));
    *resp.status_mut() = status;
    resp.headers_mut().insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("application/json; charset=utf-8"),
    );
    resp
}

/// `{"message": ...}`.
pub fn message(status: StatusCode, msg: &str) -> Reply {
    json(status, &json!({ "message": msg }))
}

/// Kong's structured error: `{code, name, message, fields}`.
pub fn error(status: StatusCode, code: u32, name: &str, msg: &str, fields: Value) -> Reply {
    json(
        status,
        &json!({ "code": code, "name": name, "message": msg, "fields": fields }),
    )
}

pub fn not_found() -> Reply {
    message(StatusCode::NOT_FOUND, "Not found")
}

pub fn method_not_allowed() -> Reply {
    message(StatusCode::METHOD_NOT_ALLOWED, "Method not allowed")
}

/// DB-less refusal of an entity write.
pub fn dbless_write(method: &http::Method, collection: &str) -> Reply {
    let verb = match *method {
        http::Method::POST => "create",
        http::Method::PUT => "create or update",
        http::Method::PATCH => "update",
        _ => "delete",
    };
    let msg = format!("cannot {verb} '{collection}' entities when not using a database");
    error(
        StatusCode::METHOD_NOT_ALLOWED,
        12,
        "operation unsupported",
        &msg,
        json!({}),
    )
}
