//! A control plane's view of its data planes, as Kong's `kong/api/routes/clustering.lua` serves it:
//! `GET /clustering/data-planes` (a paged collection of Kong's `clustering_data_planes` rows) and the
//! deprecated `GET /clustering/status` (an object by id, with a `Deprecation: true` header). On a node that
//! is not a control plane both answer Kong's 400.

use crate::errors::ApiError;
use crate::reply::{self, Reply};
use crate::Control;
use serde_json::{json, Map, Value};

const NOT_A_CONTROL_PLANE: &str =
    "this endpoint is only available when Kong is configured to run as Control Plane for the cluster";

/// `/clustering/data-planes`.
pub fn data_planes(control: &dyn Control) -> Result<Reply, ApiError> {
    let planes = control
        .data_planes()
        .ok_or_else(|| ApiError::BadRequest(NOT_A_CONTROL_PLANE.into()))?;
    Ok(reply::ok(&json!({ "data": planes, "next": null })))
}

/// `/clustering/status`.
pub fn status(control: &dyn Control) -> Result<Reply, ApiError> {
    let planes = control
        .data_planes()
        .ok_or_else(|| ApiError::BadRequest(NOT_A_CONTROL_PLANE.into()))?;
    let mut by_id = Map::new();
    for p in planes {
        let field = |k: &str| p.get(k).cloned().unwrap_or(Value::Null);
        let row = json!({
            "config_hash": field("config_hash"),
            "hostname": field("hostname"),
            "ip": field("ip"),
            "last_seen": field("last_seen"),
        });
        if let Some(id) = p.get("id").and_then(Value::as_str) {
            by_id.insert(id.to_string(), row);
        }
    }
    let mut reply = reply::ok(&Value::Object(by_id));
    reply
        .headers_mut()
        .insert("deprecation", http::HeaderValue::from_static("true"));
    Ok(reply)
}
