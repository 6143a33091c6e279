//! CP frames: reconfigure as Kong's CP builds it (with the hashes Kong's Lua computed), Kong's DP rules
//! for missing hashes, the payload bound, and unknown types.

use crate::test_vectors as vectors;

use super::*;
use crate::gzip::{deflate, DEFAULT_MAX_PAYLOAD};
use crate::hash::EMPTY_CONFIG_HASH;
use serde_json::json;

fn typical() -> vectors::Vector {
    vectors::vectors()
        .into_iter()
        .find(|v| v.name == "typical")
        .unwrap()
}

#[test]
fn reads_a_kong_reconfigure_and_agrees_with_its_hashes() {
    let v = typical();
    let [config, routes, services, plugins, upstreams, targets] = v.kong;
    // Kong's frame: hashes from Kong's Lua (the golden vector), timestamp from ngx.now()
    let frame = json!({"type": "reconfigure", "timestamp": 1732435200.123, "config_table": v.config,
                       "config_hash": config, "hashes": {"config": config, "routes": routes,
                       "services": services, "plugins": plugins, "upstreams": upstreams, "targets": targets}});
    let msg =
        CpMessage::decode(&deflate(frame.to_string().as_bytes()), DEFAULT_MAX_PAYLOAD).unwrap();
    let CpMessage::Reconfigure(r) = msg else {
        panic!("{msg:?}")
    };
    assert_eq!(r.timestamp, Some(1732435200.123));
    assert_eq!(r.config_hash, config);
    // what a Sluice node computes over the received table is what Kong sent
    assert_eq!(Some(config_hashes(&r.config_table)), r.hashes);
    assert_eq!(
        r.configured_plugins().into_iter().collect::<Vec<_>>(),
        ["rate-limiting"]
    );
}

#[test]
fn builds_reconfigure_like_kongs_cp() {
    let v = typical();
    let r = Reconfigure::new(v.config.clone(), 1732435200.5);
    let json: Value = serde_json::from_slice(&r.to_json()).unwrap();
    let keys: Vec<&str> = json
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        ["type", "timestamp", "config_table", "config_hash", "hashes"]
    );
    assert_eq!(json["type"], "reconfigure");
    assert_eq!(json["config_hash"], v.kong[0]);
    assert_eq!(json["hashes"]["targets"], v.kong[5]);
    let back = CpMessage::decode(&r.encode(), DEFAULT_MAX_PAYLOAD).unwrap();
    assert_eq!(back, CpMessage::Reconfigure(r));
}

#[test]
fn missing_hashes_follow_kongs_dp() {
    let z = |v: Value| deflate(v.to_string().as_bytes());
    // no config_hash: the DP computes the hash and every group hash
    let m = CpMessage::decode(
        &z(json!({"type": "reconfigure", "config_table": {"routes": []}})),
        1 << 20,
    )
    .unwrap();
    let CpMessage::Reconfigure(r) = m else {
        panic!()
    };
    assert_eq!(Some(config_hashes(&json!({"routes": []}))), r.hashes);
    assert_eq!(r.config_hash, r.hashes.as_ref().unwrap().config);
    // a config_hash and partial hashes: missing groups are zeros
    let frame = json!({"type": "reconfigure", "config_table": {}, "config_hash": "h", "hashes": {"routes": "r"}});
    let CpMessage::Reconfigure(r) = CpMessage::decode(&z(frame), 1 << 20).unwrap() else {
        panic!()
    };
    let h = r.hashes.unwrap();
    assert_eq!(
        (h.config.as_str(), h.routes.as_str(), h.targets.as_str()),
        (EMPTY_CONFIG_HASH, "r", EMPTY_CONFIG_HASH)
    );
    // a config_hash without hashes: none
    let frame = json!({"type": "reconfigure", "config_table": {}, "config_hash": "h"});
    let CpMessage::Reconfigure(r) = CpMessage::decode(&z(frame), 1 << 20).unwrap() else {
        panic!()
    };
    assert_eq!(r.hashes, None);
}

#[test]
fn refuses_bad_frames_and_skips_unknown_ones() {
    let z = |v: Value| deflate(v.to_string().as_bytes());
    let err = CpMessage::decode(
        &z(json!({"type": "reconfigure", "config_table": []})),
        1 << 20,
    )
    .unwrap_err();
    assert!(matches!(err, FrameError::NoConfigTable));
    assert_eq!(
        CpMessage::decode(&z(json!({"type": "hello"})), 1 << 20).unwrap(),
        CpMessage::Other("hello".into())
    );
    let big = Reconfigure::new(vectors::large(2000), 0.0).encode();
    let err = CpMessage::decode(&big, 100_000).unwrap_err();
    assert_eq!(
        err.to_string(),
        "payload inflates past the cluster_max_payload limit of 100000 bytes"
    );
    assert!(
        matches!(
            CpMessage::decode(b"{}", 1 << 20),
            Err(FrameError::Inflate(_))
        ),
        "not gzip"
    );
}
