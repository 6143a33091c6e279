use super::proto::{export_request, KeyValue, Span, Value};
use super::spans::resource_and_scope;
use prost::Message;
use serde_json::json;
use sluice_model::schema::Schema;

/// The outer OTLP messages, declared here only to read back what [`export_request`] framed by hand.
#[derive(Clone, PartialEq, Message)]
struct ExportTraceServiceRequest {
    #[prost(message, repeated, tag = "1")]
    resource_spans: Vec<ResourceSpans>,
}

#[derive(Clone, PartialEq, Message)]
struct ResourceSpans {
    #[prost(message, optional, tag = "1")]
    resource: Option<super::proto::Resource>,
    #[prost(message, repeated, tag = "2")]
    scope_spans: Vec<ScopeSpans>,
}

#[derive(Clone, PartialEq, Message)]
struct ScopeSpans {
    #[prost(message, optional, tag = "1")]
    scope: Option<super::proto::InstrumentationScope>,
    #[prost(message, repeated, tag = "2")]
    spans: Vec<Span>,
}

#[test]
fn a_batch_of_encoded_spans_is_one_export_request() {
    let attrs = [
        ("service.name".to_string(), "edge".to_string()),
        ("env".into(), "prod".into()),
    ];
    let (resource, scope) = resource_and_scope(Some(&attrs.into_iter().collect()));
    let spans: Vec<Span> = (0..3u8)
        .map(|i| Span {
            trace_id: vec![1; 16],
            span_id: vec![i + 1; 8],
            name: format!("span {i}"),
            kind: 2,
            start_time_unix_nano: 10,
            end_time_unix_nano: 20,
            attributes: vec![KeyValue::new("http.status_code", Value::Int(200))],
            ..Span::default()
        })
        .collect();
    let encoded: Vec<bytes::Bytes> = spans.iter().map(|s| s.encode_to_vec().into()).collect();
    let request =
        ExportTraceServiceRequest::decode(export_request(&resource, &scope, &encoded)).unwrap();
    let [rs] = &request.resource_spans[..] else {
        panic!("one ResourceSpans")
    };
    let attributes = &rs.resource.as_ref().unwrap().attributes;
    let names: Vec<_> = attributes.iter().map(|kv| kv.key.as_str()).collect();
    assert_eq!(names, ["env", "service.name"]);
    assert_eq!(
        attributes[1].value.as_ref().unwrap().value,
        Some(Value::String("edge".into()))
    );
    let [ss] = &rs.scope_spans[..] else {
        panic!("one ScopeSpans")
    };
    assert_eq!(ss.scope.as_ref().unwrap().name, "kong-internal");
    assert_eq!(ss.spans, spans);
}

fn validate(config: serde_json::Value) -> Result<serde_json::Value, String> {
    let schema: Schema = super::schema();
    schema.validate(&config).map_err(|e| format!("{e:?}"))
}

#[test]
fn schema_defaults_and_checks() {
    let v = validate(json!({"traces_endpoint": "http://127.0.0.1:4318/v1/traces"})).unwrap();
    assert_eq!(v["queue"]["max_batch_size"], 200);
    assert_eq!(v["propagation"]["default_format"], "w3c");
    assert_eq!(
        (v["connect_timeout"].clone(), v["send_timeout"].clone()),
        (json!(1000), json!(5000))
    );
    assert_eq!(v["header_type"], "preserve");
    let none = validate(json!({})).unwrap_err();
    assert!(
        none.contains("at least one of these fields must be non-empty"),
        "{none}"
    );
    let logs = validate(json!({"logs_endpoint": "http://x/v1/logs"})).unwrap_err();
    assert!(logs.contains("not supported"), "{logs}");
    assert!(validate(json!({"traces_endpoint": "ftp://x"})).is_err());
    assert!(validate(json!({"traces_endpoint": "http://x", "sampling_rate": 2})).is_err());
    let bad =
        validate(json!({"traces_endpoint": "http://x", "propagation": {"extract": ["b3-single"]}}));
    assert!(bad.is_err(), "b3-single is extracted as b3");
    let partial =
        validate(json!({"traces_endpoint": "http://x", "propagation": {"inject": ["w3c"]}}));
    assert!(
        partial.unwrap_err().contains("default_format"),
        "a given record needs default_format"
    );
}

#[test]
fn the_deprecated_endpoint_sets_traces_endpoint_and_is_not_kept() {
    let v = validate(json!({"endpoint": "http://127.0.0.1:4318/v1/traces"})).unwrap();
    assert_eq!(v["traces_endpoint"], "http://127.0.0.1:4318/v1/traces");
    assert!(v.get("endpoint").is_none(), "{v}");
    let v = validate(json!({"traces_endpoint": "http://a/v1/traces"})).unwrap();
    assert!(v.get("endpoint").is_none(), "{v}");
}
