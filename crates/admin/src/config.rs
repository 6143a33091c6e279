//! `GET /config` and `POST /config`.

use crate::body::declarative_doc;
use crate::page::params;
use crate::reply::{self, Reply};
use crate::{Control, LoadError, LoadOptions, LoadOutcome};
use http::{HeaderValue, StatusCode};
use serde_json::json;

pub fn get(control: &dyn Control) -> Reply {
    let yaml = sluice_model::declarative::export_yaml(&control.config());
    reply::json(StatusCode::OK, &json!({ "config": yaml }))
}

fn flag(query: Option<&str>, name: &str) -> bool {
    params(query)
        .iter()
        .any(|(k, v)| k == name && matches!(v.as_str(), "1" | "true" | ""))
}

pub async fn post(
    control: &dyn Control,
    query: Option<&str>,
    content_type: &str,
    body: &[u8],
) -> Reply {
    let flatten = flag(query, "flatten_errors");
    let doc = match declarative_doc(content_type, body) {
        Ok(doc) => doc,
        Err(msg) => {
            let mut body = json!({
                "code": 14, "name": "invalid declarative configuration", "message": msg, "fields": {},
            });
            if flatten {
                body["flattened_errors"] = json!([]);
            }
            return reply::json(StatusCode::BAD_REQUEST, &body);
        }
    };
    let opts = LoadOptions {
        check_hash: flag(query, "check_hash"),
    };
    match control.load(doc, opts).await {
        Ok(LoadOutcome::Loaded(config)) => reply::json(
            StatusCode::CREATED,
            &sluice_model::declarative::export(&config),
        ),
        Ok(LoadOutcome::Unchanged) => {
            let mut r = reply::json(StatusCode::NOT_MODIFIED, &json!({}));
            *r.body_mut() = Default::default();
            r
        }
        Err(LoadError::Invalid(errors)) => {
            let mut body = json!({
                "code": 14,
                "name": "invalid declarative configuration",
                "message": errors.message(),
                "fields": errors.kong_fields(),
            });
            if flatten {
                body["flattened_errors"] = errors.flattened();
            }
            reply::json(StatusCode::BAD_REQUEST, &body)
        }
        Err(LoadError::Busy) => {
            let mut r = reply::message(
                StatusCode::TOO_MANY_REQUESTS,
                "Currently loading previous configuration",
            );
            r.headers_mut()
                .insert(http::header::RETRY_AFTER, HeaderValue::from_static("1"));
            r
        }
        Err(LoadError::TooLarge(msg)) => reply::message(StatusCode::PAYLOAD_TOO_LARGE, &msg),
        Err(LoadError::Internal(msg)) => {
            tracing::error!(error = %msg, "POST /config failed");
            reply::message(
                StatusCode::INTERNAL_SERVER_ERROR,
                "An unexpected error occurred",
            )
        }
    }
}
