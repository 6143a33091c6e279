//! Unit tests of `errors`.

use super::*;
use http_body_util::BodyExt;

async fn body(reply: Reply) -> (StatusCode, Value) {
    let status = reply.status();
    let bytes = reply
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

#[tokio::test]
async fn dao_errors_have_kong_codes_and_no_fields_key() {
    let (status, b) = body(ApiError::InvalidOffset("x".into()).into_reply()).await;
    assert_eq!(status, 400);
    assert_eq!(
        b,
        json!({"code": 7, "name": "invalid offset", "message": "'x' is not a valid offset: bad base64 encoding"})
    );
    let err = ApiError::Unsupported("cannot create 'routes' entities".into());
    let (status, b) = body(err.into_reply()).await;
    assert_eq!(status, 405);
    assert_eq!(b["code"], 12);
    assert!(b.get("fields").is_none());
}

#[tokio::test]
async fn invalid_option_names_the_option_in_message_and_fields() {
    let err = ApiError::InvalidOption {
        option: "tags",
        message: "invalid filter syntax".into(),
    };
    let (status, b) = body(err.into_reply()).await;
    assert_eq!(status, 400);
    assert_eq!(b["code"], 11);
    assert_eq!(b["message"], "invalid option (tags: invalid filter syntax)");
    assert_eq!(b["fields"], json!({"tags": "invalid filter syntax"}));
}

#[tokio::test]
async fn unparsable_config_matches_kongs_lua_table_message() {
    let reason = "failed parsing declarative configuration: expected an object";
    let (status, b) = body(ApiError::unparsable(reason).into_reply()).await;
    assert_eq!(status, 400);
    assert_eq!(b["code"], 14);
    assert_eq!(b["name"], "invalid declarative configuration");
    assert_eq!(b["fields"]["error"], reason);
    assert_eq!(
        b["message"],
        "declarative config is invalid: {error=\"failed parsing declarative configuration: expected an object\"}"
    );
    assert!(b.get("flattened_errors").is_none());
}

#[tokio::test]
async fn busy_sets_retry_after_and_internal_hides_detail() {
    let r = ApiError::Busy.into_reply();
    assert_eq!(r.status(), 429);
    assert_eq!(r.headers()[http::header::RETRY_AFTER], "1");
    let (status, b) = body(ApiError::Internal("disk on fire".into()).into_reply()).await;
    assert_eq!(status, 500);
    assert_eq!(b, json!({"message": "An unexpected error occurred"}));
}
