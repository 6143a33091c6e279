//! Response builders shared by every handler: JSON bodies with Kong's content type, and empty bodies.

use bytes::Bytes;
use http::{HeaderValue, Response, StatusCode};
use http_body_util::Full;
use serde_json::{json, Value};

/// Every admin response: a fully buffered body (admin responses are small or already serialized).
pub type Reply = Response<Full<Bytes>>;

/// Kong's content type for every JSON admin response.
const JSON_TYPE: &str = "application/json; charset=utf-8";

/// A JSON response with Kong's content type.
pub fn json(status: StatusCode, body: &Value) -> Reply {
    json_bytes(status, body.to_string().into_bytes())
}

/// A JSON response with Kong's content type, from already serialized JSON.
pub fn json_bytes(status: StatusCode, body: Vec<u8>) -> Reply {
    let mut resp = Response::new(Full::new(Bytes::from(body)));
    *resp.status_mut() = status;
    resp.headers_mut().insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static(JSON_TYPE),
    );
    resp
}

/// `200` with `body` as JSON.
pub fn ok(body: &Value) -> Reply {
    json(StatusCode::OK, body)
}

/// `{"message": ...}` with `status`, Kong's shape for errors that carry no code.
pub fn message(status: StatusCode, msg: &str) -> Reply {
    json(status, &json!({ "message": msg }))
}

/// A response without a body (304, 204).
pub fn empty(status: StatusCode) -> Reply {
    let mut resp = Response::new(Full::new(Bytes::new()));
    *resp.status_mut() = status;
    resp
}

/// A plain-text response (the Prometheus exposition of `/metrics`).
pub fn text(content_type: &'static str, body: String) -> Reply {
    let mut resp = Response::new(Full::new(Bytes::from(body)));
    resp.headers_mut().insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static(content_type),
    );
    resp
}
