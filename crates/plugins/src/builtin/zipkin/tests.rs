use crate::logging::json::array as json_array;
use serde_json::json;

fn validate(config: serde_json::Value) -> Result<serde_json::Value, String> {
    super::schema()
        .validate(&config)
        .map_err(|e| format!("{e:?}"))
}

#[test]
fn schema_defaults_as_kong() {
    let v = validate(json!({})).unwrap();
    assert_eq!(v["local_service_name"], "kong");
    assert_eq!(v["sample_ratio"], 0.001);
    assert_eq!(v["traceid_byte_count"], 16);
    assert_eq!(v["default_header_type"], "b3");
    assert_eq!(v["tags_header"], "Zipkin-Tags");
    assert_eq!(v["propagation"]["default_format"], "b3");
    assert_eq!(v["queue"]["max_batch_size"], 1);
    assert_eq!(
        (
            v["connect_timeout"].clone(),
            v["phase_duration_flavor"].clone()
        ),
        (json!(2000), json!("annotations"))
    );
}

#[test]
fn static_tags_cannot_be_protected_or_repeated() {
    let protected =
        validate(json!({"static_tags": [{"name": "http.method", "value": "x"}]})).unwrap_err();
    assert!(protected.contains("must not be one of"), "{protected}");
    let tags = json!([{"name": "env", "value": "a"}, {"name": "env", "value": "b"}]);
    let repeated = validate(json!({"static_tags": tags})).unwrap_err();
    assert!(
        repeated.contains("repeated tags are not allowed: env"),
        "{repeated}"
    );
    assert!(validate(json!({"traceid_byte_count": 12})).is_err());
    assert!(validate(json!({"sample_ratio": 1.5})).is_err());
}

#[test]
fn a_batch_is_a_json_array() {
    let batch = [
        bytes::Bytes::from_static(b"{\"id\":\"1\"}"),
        bytes::Bytes::from_static(b"{\"id\":\"2\"}"),
    ];
    let body: serde_json::Value = serde_json::from_slice(&json_array(&batch)).unwrap();
    assert_eq!(body, json!([{"id": "1"}, {"id": "2"}]));
}
