use super::proto::{export_request, AnyValue, KeyValue, SpanHead, SpanWriter, Value};
use super::spans::resource_and_scope;
use prost::Message;
use serde_json::json;
use sluice_model::schema::Schema;

/// `Status`: code 0 unset, 1 ok, 2 error.
#[derive(Clone, PartialEq, Message)]
pub struct Status {
    #[prost(string, tag = "2")]
    pub message: String,
    #[prost(int32, tag = "3")]
    pub code: i32,
}

/// The `Span` message as prost writes it: what [`SpanWriter`] must write byte for byte. Span kinds
/// used here: 2 server, 3 client.
#[derive(Clone, PartialEq, Message)]
pub struct Span {
    #[prost(bytes = "vec", tag = "1")]
    pub trace_id: Vec<u8>,
    #[prost(bytes = "vec", tag = "2")]
    pub span_id: Vec<u8>,
    #[prost(bytes = "vec", tag = "4")]
    pub parent_span_id: Vec<u8>,
    #[prost(string, tag = "5")]
    pub name: String,
    #[prost(int32, tag = "6")]
    pub kind: i32,
    #[prost(fixed64, tag = "7")]
    pub start_time_unix_nano: u64,
    #[prost(fixed64, tag = "8")]
    pub end_time_unix_nano: u64,
    #[prost(message, repeated, tag = "9")]
    pub attributes: Vec<KeyValue>,
    #[prost(message, optional, tag = "15")]
    pub status: Option<Status>,
}

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

/// One span through [`SpanWriter`] and the same span as a prost struct: a root span without a parent and
/// a client span with every kind of attribute, a value longer than one length byte holds, and an error
/// status.
#[test]
fn the_span_writer_writes_what_prost_writes() {
    let long = format!("http://example.test/{}", "p".repeat(300));
    let head = |parent: &'static [u8], kind| SpanHead {
        trace_id: &[7; 16],
        span_id: &[9; 8],
        parent_span_id: parent,
        name: "kong.balancer",
        kind,
        start_time_unix_nano: 1_700_000_000_000_000_001,
        end_time_unix_nano: 1_700_000_000_500_000_000,
    };
    let reference = |parent: &[u8], kind, attributes, status| Span {
        trace_id: vec![7; 16],
        span_id: vec![9; 8],
        parent_span_id: parent.to_vec(),
        name: "kong.balancer".into(),
        kind,
        start_time_unix_nano: 1_700_000_000_000_000_001,
        end_time_unix_nano: 1_700_000_000_500_000_000,
        attributes,
        status,
    };
    let mut root = SpanWriter::new(&head(&[], 2));
    root.text("http.method", "GET");
    assert_eq!(
        root.finish(),
        reference(
            &[],
            2,
            vec![KeyValue::new("http.method", Value::String("GET".into()))],
            None
        )
        .encode_to_vec()
    );
    let mut client = SpanWriter::new(&head(&[3; 8], 3));
    client.double("try_count", 2.0);
    client.text_with("http.url", |out| out.extend_from_slice(long.as_bytes()));
    client.text("http.route", "");
    client.int("http.status_code", -1);
    client.int("zero", 0);
    client.error_status();
    let attributes = vec![
        KeyValue::new("try_count", Value::Double(2.0)),
        KeyValue::new("http.url", Value::String(long.clone())),
        KeyValue::new("http.route", Value::String(String::new())),
        KeyValue::new("http.status_code", Value::Int(-1)),
        KeyValue {
            key: "zero".into(),
            value: Some(AnyValue {
                value: Some(Value::Int(0)),
            }),
        },
    ];
    let status = Some(Status {
        message: String::new(),
        code: 2,
    });
    assert_eq!(
        client.finish(),
        reference(&[3; 8], 3, attributes, status).encode_to_vec()
    );
}
