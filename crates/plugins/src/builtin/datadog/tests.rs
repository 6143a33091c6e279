//! datadog's schema (Kong's defaults and error messages) and the DogStatsD lines Kong's handler writes.

use super::*;
use crate::builtin::statsd_lines::tests::sample;
use crate::builtin::statsd_lines::{ConsumerRef, Lines};
use serde_json::{json, Value};

fn lines(input: Value, s: &Sample<'_>) -> Vec<String> {
    let valid = schema().validate(&input).expect("valid config");
    let config: Config = serde_json::from_value(valid).expect("typed config");
    let mut lines = Lines::default();
    DatadogFormat::new(&config).write(s, &mut lines);
    lines.to_vec()
}

#[test]
fn fills_kongs_defaults() {
    let valid = schema().validate(&json!({})).unwrap();
    for (field, value) in [
        ("host", json!("localhost")),
        ("port", json!(8125)),
        ("prefix", json!("kong")),
        ("service_name_tag", json!("name")),
        ("status_tag", json!("status")),
        ("consumer_tag", json!("consumer")),
    ] {
        assert_eq!(valid[field], value, "{field}");
    }
    let metrics = valid["metrics"].as_array().unwrap();
    assert_eq!(metrics.len(), 6);
    assert_eq!(metrics[2]["stat_type"], "timer", "request_size is a timer");
    assert_eq!(metrics[0]["tags"], json!(["app:kong"]));
}

#[test]
fn refuses_what_kong_refuses() {
    let metric = |m: Value| json!({"metrics": [m]});
    let cases = [
        (metric(json!({"name": "request_count", "sample_rate": 1})), "metrics.1.stat_type: field required for entity check"),
        (metric(json!({"stat_type": "counter", "sample_rate": 1})), "metrics.1.name: required field missing"),
        (metric(json!({"name": "request_count", "stat_type": "counter"})), "metrics.1.sample_rate: required field missing"),
        (metric(json!({"name": "unique_users", "stat_type": "set"})), "metrics.1.name: expected one of: kong_latency, latency, request_count, request_size, response_size, upstream_latency"),
        (metric(json!({"name": "latency", "stat_type": "x"})), "metrics.1.stat_type: expected one of: counter, gauge, histogram, meter, set, timer, distribution"),
        (metric(json!({"name": "latency", "stat_type": "timer", "tags": ["T1:"]})), "metrics.1.tags.1: invalid value: T1:"),
        (metric(json!({"name": "latency", "stat_type": "timer", "sample_rate": 1.5})), "metrics.1.sample_rate: value should be between 0 and 1"),
        (metric(json!({"name": "latency", "stat_type": "timer", "consumer_identifier": "x"})), "metrics.1.consumer_identifier: expected one of: consumer_id, custom_id, username"),
    ];
    for (input, expected) in cases {
        let errs: Vec<String> = schema()
            .validate(&input)
            .expect_err("refused")
            .iter()
            .map(|e| format!("{}: {}", e.field, e.message))
            .collect();
        assert!(
            errs.iter().any(|e| e.starts_with(expected)),
            "{input}: {errs:?}"
        );
    }
    let ok = metric(json!({"name": "latency", "stat_type": "timer", "tags": [], "sample_rate": 0}));
    assert!(schema().validate(&ok).is_ok());
}

#[test]
fn default_metrics_make_kongs_lines() {
    let tags = "|#name:billing_v1,status:200,consumer:robert,app:kong";
    assert_eq!(
        lines(json!({}), &sample()),
        [
            format!("kong.request.count:1|c{tags}"),
            format!("kong.latency:7|ms{tags}"),
            format!("kong.request.size:120|ms{tags}"),
            format!("kong.response.size:310|ms{tags}"),
            format!("kong.upstream_latency:5|ms{tags}"),
            format!("kong.kong_latency:1|ms{tags}"),
        ]
    );
}

#[test]
fn tag_names_extra_tags_rates_and_consumer_ids() {
    let config = json!({
        "prefix": "edge", "service_name_tag": "upstream", "status_tag": "http_status", "consumer_tag": "user",
        "metrics": [
            {"name": "request_count", "stat_type": "counter", "sample_rate": 0.5, "tags": ["T2:V2", "T3:V3", "T4"]},
            {"name": "latency", "stat_type": "gauge", "sample_rate": 1, "tags": ["T2:V2:V3", "T4"], "consumer_identifier": "consumer_id"},
            {"name": "request_size", "stat_type": "distribution", "sample_rate": 1, "tags": [], "consumer_identifier": "username"},
        ]
    });
    assert_eq!(
        lines(config, &sample()),
        [
            "edge.request.count:1|c|@0.5|#upstream:billing_v1,http_status:200,T2:V2,T3:V3,T4",
            "edge.latency:7|g|#upstream:billing_v1,http_status:200,user:00000000_0000_0000_0000_000000003333,T2:V2:V3,T4",
            "edge.request.size:120|d|#upstream:billing_v1,http_status:200,user:bob",
        ]
    );
    // Not proxied, no service (a serviceless route), a consumer without username.
    let s = Sample {
        stream: false,
        upstream_latency: -1,
        service: None,
        consumer: Some(ConsumerRef {
            username: None,
            ..sample().consumer.unwrap()
        }),
        ..sample()
    };
    let one = json!({"metrics": [{"name": "upstream_latency", "stat_type": "timer", "consumer_identifier": "username"}]});
    assert_eq!(
        lines(one, &s),
        ["kong.upstream_latency:-1|ms|#name:,status:200"]
    );
}

#[test]
fn a_stream_session_gives_the_count_and_kong_latency_tagged_status_dash() {
    let session = Sample {
        stream: true,
        consumer: None,
        ..sample()
    };
    // Packing keeps the mark, as the log thread reads it back.
    let packed = session.pack();
    let session = Sample::unpack(&packed).unwrap();
    assert!(session.stream);
    assert_eq!(
        lines(json!({}), &session),
        [
            "kong.request.count:1|c|#name:billing_v1,status:-,app:kong",
            "kong.kong_latency:1|ms|#name:billing_v1,status:-,app:kong",
        ]
    );
}
