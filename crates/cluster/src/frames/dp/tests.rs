//! DP frames: a basic_info as a Kong 3.9 DP writes it, Kong's refusals, pings, the outlet query, errors.

use super::*;
use serde_json::json;

/// What a Kong 3.9 DP sends (cjson output, trimmed `process_conf`).
const KONG_BASIC_INFO: &str = r#"{"filters":{},"labels":{"region":"eu-west","tier":"edge"},"process_conf":{"role":"data_plane","database":"off","cluster_control_plane":"cp.internal:8005","pg_password":"******"},"type":"basic_info","plugins":[{"version":"3.9.1","name":"acl"},{"version":"0.1.0","name":"opentelemetry"},{"name":"custom"}]}"#;

#[test]
fn reads_a_kong_basic_info() {
    let info = BasicInfo::decode(KONG_BASIC_INFO.as_bytes()).unwrap();
    assert_eq!(info.plugins.len(), 3);
    assert_eq!(
        info.plugins[0],
        PluginInfo {
            name: "acl".into(),
            version: Some("3.9.1".into())
        }
    );
    assert_eq!(info.plugins[2].version, None);
    let labels = info.labels.as_ref().unwrap();
    assert_eq!(labels["region"], "eu-west");
    assert_eq!(info.process_conf.as_ref().unwrap()["role"], "data_plane");
    assert_eq!(info.filters, Some(json!({})));
    assert!(!info.offers_deltas(), "a Kong DP offers no extension");
}

#[test]
fn writes_basic_info_with_kongs_fields() {
    let info = BasicInfo {
        plugins: vec![PluginInfo {
            name: "key-auth".into(),
            version: Some("0.1.0".into()),
        }],
        labels: Some(labels(&["region:eu:1".to_owned()]).unwrap()),
        process_conf: None,
        filters: Some(json!({})),
        sluice: Some(crate::delta::SluiceHello::current(None)),
    };
    let v: Value = serde_json::from_slice(&info.encode()).unwrap();
    assert_eq!(
        v,
        json!({"type": "basic_info", "plugins": [{"name": "key-auth", "version": "0.1.0"}],
               "labels": {"region": "eu:1"}, "filters": {}, "sluice": {"capabilities": ["delta.v1"]}})
    );
    let back = BasicInfo::decode(&info.encode()).unwrap();
    assert_eq!(back, info);
    assert!(back.offers_deltas());
    assert!(labels(&["nocolon".to_owned()]).is_err());
}

#[test]
fn refuses_what_kongs_cp_refuses() {
    let msg = |data: &str| BasicInfo::decode(data.as_bytes()).unwrap_err().to_string();
    assert!(msg("not json").starts_with("failed to decode websocket basic info data: "));
    assert_eq!(msg("[1]"), "failed to decode websocket basic info data");
    assert_eq!(
        msg(r#"{"plugins":[]}"#),
        "invalid basic info data type: unknown"
    );
    assert_eq!(
        msg(r#"{"type":"ping","plugins":[]}"#),
        "invalid basic info data type: ping"
    );
    assert_eq!(
        msg(r#"{"type":"basic_info"}"#),
        "missing plugins in basic info data"
    );
    assert_eq!(
        msg(r#"{"type":"basic_info","plugins":"acl"}"#),
        "missing plugins in basic info data"
    );
    // a JSON object is a Lua table: accepted, with no plugins
    let info = BasicInfo::decode(br#"{"type":"basic_info","plugins":{}}"#).unwrap();
    assert!(info.plugins.is_empty());
}

#[test]
fn ping_carries_the_hash_or_zeros() {
    assert_eq!(ping_payload(None), "00000000000000000000000000000000");
    assert_eq!(ping_payload(Some("")), "00000000000000000000000000000000");
    assert_eq!(
        ping_payload(Some("2ed4aae3bb886dd963a57329c6340c08")),
        "2ed4aae3bb886dd963a57329c6340c08"
    );
    assert_eq!(
        parse_ping(b"2ed4aae3bb886dd963a57329c6340c08").unwrap(),
        "2ed4aae3bb886dd963a57329c6340c08"
    );
    assert_eq!(
        parse_ping(b"short").unwrap_err().to_string(),
        "received a ping frame from the data plane with an invalid hash: 'short'"
    );
    assert!(parse_ping(b"").is_err());
}

#[test]
fn outlet_query_round_trips_and_needs_id_and_version() {
    let o = Outlet {
        node_id: "8a3c5f7e-1111-4222-8333-944455556666".into(),
        node_hostname: Some("dp-1".into()),
        node_version: "3.9.1".into(),
    };
    assert_eq!(
        o.path(),
        "/v1/outlet?node_id=8a3c5f7e-1111-4222-8333-944455556666&node_hostname=dp-1&node_version=3.9.1"
    );
    assert_eq!(
        Outlet::parse(o.path().split_once('?').unwrap().1).unwrap(),
        o
    );
    let no_host = Outlet::parse("node_version=3.9.0&node_id=x").unwrap();
    assert_eq!(no_host.node_hostname, None);
    assert_eq!(
        Outlet::parse("node_hostname=h&node_version=3.9.0"),
        Err("data plane didn't pass the id")
    );
    assert_eq!(
        Outlet::parse("node_id=x"),
        Err("data plane didn't pass the version")
    );
}

#[test]
fn error_reports_as_kongs_dp_sends_them() {
    let report = ErrorReport {
        name: error_names::CONFIG_PARSE.into(),
        source: "kong.db.declarative.parse_table".into(),
        message: "declarative config is invalid: {}".into(),
        config_hash: "2ed4aae3bb886dd963a57329c6340c08".into(),
        extra: json!({"flattened_errors": [], "fields": {}})
            .as_object()
            .unwrap()
            .clone(),
    };
    let v: Value = serde_json::from_slice(&report.encode()).unwrap();
    assert_eq!(v["type"], "error");
    assert_eq!(
        v["error"]["name"],
        "declarative configuration parse failure"
    );
    assert_eq!(v["error"]["fields"], json!({}));
    assert_eq!(
        DpMessage::decode(&report.encode()).unwrap(),
        DpMessage::Error(report)
    );
    assert_eq!(
        DpMessage::decode(br#"{"type":"x"}"#).unwrap(),
        DpMessage::Other("x".into())
    );
    assert!(DpMessage::decode(b"[]").is_ok_and(|m| m == DpMessage::Other("unknown".into())));
}
