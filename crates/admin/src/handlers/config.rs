//! `GET /config` (the live config as declarative YAML) and `POST /config` (replace the whole config).

use crate::errors::{ApiError, Invalid};
use crate::handlers::entities::by_schema;
use crate::query;
use crate::reply::{self, Reply};
use crate::{BodyError, ConfigBody, Control, LoadError, LoadOptions, LoadOutcome};
use bytes::Bytes;
use http::StatusCode;
use serde_json::json;

/// `GET /config`: `{"config": "<yaml>"}`.
pub fn get(control: &dyn Control) -> Reply {
    let yaml = sluice_model::declarative::export_yaml(&control.config());
    reply::ok(&json!({ "config": yaml }))
}

/// Kong's truthiness for `flatten_errors`: `true`, `1`, `on`, `yes` (any case).
fn truthy(value: Option<String>) -> bool {
    value.is_some_and(|v| matches!(v.to_ascii_lowercase().as_str(), "true" | "1" | "on" | "yes"))
}

/// `POST /config[?check_hash=1][&flatten_errors=1]`: parse the body, load it through the node, answer
/// 201 with the loaded entities, 304 when unchanged, or Kong's error.
pub async fn post(
    control: &dyn Control,
    q: Option<&str>,
    content_type: &str,
    body: Bytes,
) -> Result<Reply, ApiError> {
    let flatten = truthy(query::get(q, "flatten_errors"));
    // Kong compares check_hash with "1" exactly (older than the truthy helper).
    let check_hash = query::get(q, "check_hash").as_deref() == Some("1");
    let body = ConfigBody::new(content_type, body);
    match control.load(body, LoadOptions { check_hash }).await {
        Ok(LoadOutcome::Loaded(config, json)) => Ok(reply::json_bytes(
            StatusCode::CREATED,
            by_schema(&config, json.as_ref()),
        )),
        Ok(LoadOutcome::Unchanged) => Ok(reply::empty(StatusCode::NOT_MODIFIED)),
        Err(LoadError::Invalid(errors)) => Err(ApiError::Declarative(Box::new(Invalid {
            fields: errors.kong_fields(),
            message: errors.message(),
            flattened: flatten.then(|| errors.flattened()),
        }))),
        Err(LoadError::Body(BodyError(e))) => Err(e),
        Err(LoadError::Busy) => Err(ApiError::Busy),
        Err(LoadError::TooLarge(msg)) => Err(ApiError::TooLarge(msg)),
        Err(LoadError::Internal(msg)) => Err(ApiError::Internal(msg)),
    }
}
