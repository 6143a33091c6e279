//! statsd's schema (Kong's defaults and error messages) and the exact lines Kong's handler writes for a
//! request, scoped and in each tag style.

use super::format::StatsdFormat;
use super::*;
use crate::builtin::statsd_lines::tests::sample;
use crate::builtin::statsd_lines::{Format, Lines, Sample};
use crate::logging::serialize::DEFAULT_WORKSPACE_ID;
use serde_json::json;

fn config(input: Value) -> Config {
    let valid = schema().validate(&input).expect("valid config");
    serde_json::from_value(valid).expect("typed config")
}

fn errors(input: Value) -> Vec<String> {
    let errs = schema().validate(&input).expect_err("refused");
    errs.iter()
        .map(|e| format!("{}: {}", e.field, e.message))
        .collect()
}

fn lines(input: Value, s: &Sample<'_>) -> Vec<String> {
    let mut lines = Lines::default();
    StatsdFormat::new(&config(input)).write(s, &mut lines);
    lines.to_vec()
}

#[test]
fn fills_kongs_defaults() {
    let valid = schema().validate(&json!({})).unwrap();
    assert_eq!(valid["host"], "localhost");
    assert_eq!(valid["port"], 8125);
    assert_eq!(valid["prefix"], "kong");
    assert_eq!(valid["udp_packet_size"], 0);
    assert_eq!(valid["consumer_identifier_default"], "custom_id");
    assert_eq!(valid["service_identifier_default"], "service_name_or_host");
    assert_eq!(valid["workspace_identifier_default"], "workspace_id");
    assert_eq!(valid["tag_style"], Value::Null);
    let metrics = valid["metrics"].as_array().unwrap();
    assert_eq!(metrics.len(), 13);
    assert_eq!(metrics[1]["name"], "latency");
    assert_eq!(
        metrics[1]["sample_rate"],
        Value::Null,
        "timers have no rate"
    );
    assert_eq!(metrics[12]["name"], "shdict_usage");
    assert_eq!(metrics[12]["sample_rate"], 1);
    let c = config(json!({}));
    assert_eq!(c.queue, QueueConfig::default());
}

#[test]
fn refuses_what_kong_refuses() {
    let metric = |m: Value| json!({"metrics": [m]});
    let cases = [
        (metric(json!({"name": "request_count", "sample_rate": 1})), "metrics.1.stat_type: field required for entity check"),
        (metric(json!({"stat_type": "counter", "sample_rate": 1})), "metrics.1.name: required field missing"),
        (metric(json!({"name": "request_count", "stat_type": "counter"})), "metrics.1.sample_rate: required field missing"),
        (metric(json!({"name": "latency", "stat_type": "gauge"})), "metrics.1.@entity: failed conditional validation given value of field 'stat_type'"),
        (metric(json!({"name": "invalid_name", "stat_type": "timer"})), "metrics.1.name: expected one of: kong_latency, latency,"),
        (metric(json!({"name": "latency", "stat_type": "invalid_stat"})), "metrics.1.stat_type: expected one of: counter, gauge, histogram, meter, set, timer"),
        (metric(json!({"name": "latency", "stat_type": "timer", "sample_rate": 0})), "metrics.1.sample_rate: value must be greater than 0"),
        (metric(json!({"name": "status_count", "stat_type": "counter", "sample_rate": 1, "service_identifier": "fooo"})), "metrics.1.service_identifier: expected one of: service_id, service_name, service_host, service_name_or_host"),
        (json!({"allow_status_codes": ["test"]}), "allow_status_codes.1: invalid value: test"),
        (json!({"allow_status_codes": ["200-300", "test-299"]}), "allow_status_codes.2: invalid value: test-299"),
        (json!({"allow_status_codes": ["200"]}), "allow_status_codes.1: invalid value: 200"),
        (json!({"udp_packet_size": -1}), "udp_packet_size: value should be between 0 and 65507"),
        (json!({"udp_packet_size": 65508}), "udp_packet_size: value should be between 0 and 65507"),
        (json!({"udp_packet_size": "a"}), "udp_packet_size: expected a number"),
        (json!({"consumer_identifier_default": "x"}), "consumer_identifier_default: expected one of: consumer_id, custom_id, username"),
        (json!({"workspace_identifier_default": "x"}), "workspace_identifier_default: expected one of: workspace_id, workspace_name"),
        (json!({"tag_style": "x"}), "tag_style: expected one of: dogstatsd, influxdb, librato, signalfx"),
        (json!({"host": "not a host"}), "host: invalid value: not a host"),
    ];
    for (input, expected) in cases {
        let errs = errors(input.clone());
        assert!(
            errs.iter().any(|e| e.starts_with(expected)),
            "{input}: {errs:?}"
        );
    }
    for ok in [
        json!({"metrics": []}),
        json!({"allow_status_codes": []}),
        json!({"udp_packet_size": 65507}),
    ] {
        assert!(schema().validate(&ok).is_ok(), "{ok}");
    }
}

#[test]
fn default_metrics_make_kongs_lines() {
    let s = sample();
    let ws = DEFAULT_WORKSPACE_ID;
    let route = "00000000-0000-0000-0000-000000002222";
    assert_eq!(
        lines(json!({}), &s),
        [
            "kong.service.billing_v1.request.count:1|c".to_string(),
            "kong.service.billing_v1.latency:7|ms".into(),
            "kong.service.billing_v1.request.size:120|c".into(),
            "kong.service.billing_v1.status.200:1|c".into(),
            "kong.service.billing_v1.response.size:310|c".into(),
            "kong.service.billing_v1.user.uniques:robert|s".into(),
            "kong.service.billing_v1.user.robert.request.count:1|c".into(),
            "kong.service.billing_v1.upstream_latency:5|ms".into(),
            "kong.service.billing_v1.kong_latency:1|ms".into(),
            "kong.service.billing_v1.user.robert.status.200:1|c".into(),
            format!("kong.service.billing_v1.workspace.{ws}.status.200:1|c"),
            format!("kong.route.{route}.user.robert.status.200:1|c"),
        ]
    );
}

#[test]
fn without_service_or_consumer_metrics_go_to_global_unmatched() {
    let s = Sample {
        stream: false,
        status: 404,
        upstream_latency: -1,
        service: None,
        route: None,
        consumer: None,
        ..sample()
    };
    assert_eq!(
        lines(json!({}), &s),
        [
            "kong.global.unmatched.request.count:1|c".to_string(),
            "kong.global.unmatched.latency:7|ms".into(),
            "kong.global.unmatched.request.size:120|c".into(),
            "kong.global.unmatched.status.404:1|c".into(),
            "kong.global.unmatched.response.size:310|c".into(),
            "kong.global.unmatched.kong_latency:1|ms".into(),
            format!("kong.global.unmatched.workspace.{DEFAULT_WORKSPACE_ID}.status.404:1|c"),
        ]
    );
}

#[test]
fn identifiers_rates_and_prefixes() {
    let s = sample();
    let two = |service: &str| {
        json!({"metrics": [
            {"name": "request_count", "stat_type": "counter", "sample_rate": 0.25, "service_identifier": service},
            {"name": "request_per_user", "stat_type": "gauge", "sample_rate": 1, "consumer_identifier": "consumer_id"},
            {"name": "latency", "stat_type": "gauge", "sample_rate": 1},
        ], "prefix": "edge", "service_identifier_default": service})
    };
    let cid = "00000000-0000-0000-0000-000000003333";
    assert_eq!(
        lines(two("service_id"), &s),
        [
            "edge.service.00000000-0000-0000-0000-000000001111.request.count:1|c|@0.25".to_string(),
            format!(
                "edge.service.00000000-0000-0000-0000-000000001111.user.{cid}.request.count:1|c"
            ),
            "edge.service.00000000-0000-0000-0000-000000001111.latency:7|g".into(),
        ]
    );
    assert_eq!(
        lines(two("service_host"), &s)[0],
        "edge.service.billing_internal.request.count:1|c|@0.25"
    );
    let unnamed = Sample {
        stream: false,
        service: Some(crate::builtin::statsd_lines::ServiceRef {
            name: None,
            ..s.service.unwrap()
        }),
        ..sample()
    };
    assert_eq!(
        lines(two("service_name"), &unnamed)[0],
        "edge.service.unnamed.request.count:1|c|@0.25"
    );
    assert_eq!(
        lines(two("service_name_or_host"), &unnamed)[0],
        "edge.service.billing_internal.request.count:1|c|@0.25"
    );
    let node = crate::builtin::statsd_lines::node_name();
    let hosted = json!({"hostname_in_prefix": true, "metrics": [{"name": "status_count", "stat_type": "counter", "sample_rate": 1}]});
    assert_eq!(
        lines(hosted, &s),
        [format!(
            "kong.node.{node}.service.billing_v1.status.200:1|c"
        )]
    );
    let workspace = json!({"metrics": [{"name": "status_count_per_workspace", "stat_type": "counter", "sample_rate": 1, "workspace_identifier": "workspace_name"}]});
    assert_eq!(
        lines(workspace, &s),
        ["kong.service.billing_v1.workspace.default.status.200:1|c"]
    );
}

#[test]
fn tag_styles_tag_the_six_plain_metrics() {
    let s = sample();
    let node = crate::builtin::statsd_lines::node_name();
    let ws = DEFAULT_WORKSPACE_ID;
    let style = |style: &str| lines(json!({"tag_style": style, "hostname_in_prefix": true}), &s);
    let dog = style("dogstatsd");
    assert_eq!(dog.len(), 6, "{dog:?}");
    let tags = format!(
        "service:billing.v1,route:invoices,workspace:{ws},consumer:robert,node:{node},status:200"
    );
    assert_eq!(dog[0], format!("kong.request.count:1|c|#{tags}"));
    assert_eq!(dog[1], format!("kong.latency:7|ms|#{tags}"));
    let eq = tags.replace(':', "=");
    assert_eq!(
        style("influxdb")[4],
        format!("kong.upstream_latency,{eq}:5|ms")
    );
    assert_eq!(
        style("librato")[3],
        format!("kong.response.size#{eq}:310|c")
    );
    assert_eq!(
        style("signalfx")[5],
        format!("kong.kong_latency[{eq}]:1|ms")
    );
    // No service identifier: Kong sends the line without tags.
    let unnamed = Sample {
        stream: false,
        service: None,
        route: None,
        consumer: None,
        upstream_latency: -1,
        ..sample()
    };
    let bare = lines(json!({"tag_style": "dogstatsd"}), &unnamed);
    assert_eq!(bare[0], "kong.request.count:1|c");
    assert_eq!(bare.len(), 5, "no upstream_latency when not proxied");
    // A route without a name is tagged with its id; no consumer tag without a consumer.
    let anonymous = Sample {
        stream: false,
        route: Some(crate::builtin::statsd_lines::sample::RouteRef {
            id: uuid::Uuid::from_u128(5),
            name: None,
        }),
        consumer: None,
        ..sample()
    };
    let first = &lines(json!({"tag_style": "influxdb"}), &anonymous)[0];
    assert_eq!(
        first,
        &format!("kong.request.count,service=billing.v1,route=00000000-0000-0000-0000-000000000005,workspace={ws},node={node},status=200:1|c")
    );
}

#[test]
fn status_ranges_read_as_kongs_handler_reads_them() {
    assert_eq!(status_range("200-299"), Some((200, 299)));
    assert_eq!(
        status_range("2000-3000"),
        Some((0, 300)),
        "the regex is not anchored"
    );
    assert_eq!(status_range("1-99"), None);
    assert_eq!(status_range("200-29"), None);
}
