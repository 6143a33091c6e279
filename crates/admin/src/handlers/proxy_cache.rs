//! proxy-cache's Admin API endpoints, as Kong's plugin adds them: `DELETE /proxy-cache` purges every
//! proxy-cache plugin's store (204); `GET|DELETE /proxy-cache/{key}` finds the key in any proxy-cache
//! plugin's store and `GET|DELETE /proxy-cache/{plugin_id}/caches/{key}` in that plugin's; GET answers the
//! cached object, DELETE 204, and 404 when it is not there. The stores are runtime state, reached through
//! [`Control`], so these work in DB-less mode too.

use crate::errors::ApiError;
use crate::reply::{self, Reply};
use crate::Control;
use http::{Method, StatusCode};

/// One request on a `/proxy-cache` path (the router already checked the method).
pub fn serve(
    control: &dyn Control,
    method: &Method,
    plugin: Option<&str>,
    key: Option<&str>,
) -> Result<Reply, ApiError> {
    let plugin = match plugin {
        Some(id) => Some(uuid::Uuid::parse_str(id).map_err(|_| ApiError::NotFound)?),
        None => None,
    };
    let Some(key) = key else {
        control.proxy_cache_purge(None, None);
        return Ok(reply::empty(StatusCode::NO_CONTENT));
    };
    if *method == Method::DELETE {
        return match control.proxy_cache_purge(plugin, Some(key)) {
            true => Ok(reply::empty(StatusCode::NO_CONTENT)),
            false => Err(ApiError::NotFound),
        };
    }
    control
        .proxy_cache_get(plugin, key)
        .map(|object| reply::ok(&object))
        .ok_or(ApiError::NotFound)
}
