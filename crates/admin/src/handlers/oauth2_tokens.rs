//! The oauth2 plugin's tokens in the Admin API, as Kong serves them: `GET /oauth2_tokens` lists the live
//! ones (`{"data": [...], "next": null}`), `GET|DELETE /oauth2_tokens/{id or access_token}` reads or
//! deletes one (404 when there is none). Tokens are runtime rows in the database, reached through
//! [`Control::oauth2_tokens`]; a node without a database answers 404.

use crate::errors::ApiError;
use crate::reply::{self, Reply};
use crate::Control;
use http::{Method, StatusCode};

/// One request on an `/oauth2_tokens` path (the router already checked the method).
pub async fn serve(
    control: &dyn Control,
    method: &Method,
    key: Option<&str>,
) -> Result<Reply, ApiError> {
    let delete = *method == Method::DELETE;
    let found = control
        .oauth2_tokens(key.map(String::from), delete)
        .await
        .ok_or(ApiError::NotFound)?
        .map_err(ApiError::Internal)?;
    match key {
        None => Ok(reply::ok(
            &serde_json::json!({ "data": found, "next": null }),
        )),
        Some(_) if found.is_empty() => Err(ApiError::NotFound),
        Some(_) if delete => Ok(reply::empty(StatusCode::NO_CONTENT)),
        Some(_) => Ok(reply::ok(&found[0])),
    }
}
