//! The delta extension: its wire shape (golden JSON), round trips, and the DP's ordering rule.

use super::*;
use crate::frames::cp::CpMessage;
use crate::frames::dp::{BasicInfo, DpMessage};
use crate::gzip::DEFAULT_MAX_PAYLOAD;
use serde_json::json;

fn delta(base: u64, version: u64) -> Delta {
    Delta {
        base_version: base,
        version,
        config_hash: "c".repeat(32),
        hashes: ConfigHashes::empty(),
        digest: None,
        changes: vec![
            Change {
                kind: "routes".into(),
                id: "481a9539-f49c-51b6-b2e2-fe99ee68866c".into(),
                op: Op::Upsert {
                    entity: json!({"id": "481a9539-f49c-51b6-b2e2-fe99ee68866c", "paths": ["/a"]}),
                },
            },
            Change {
                kind: "plugins".into(),
                id: "ac1c3e2d-8c9f-5b7c-a10c-6f9e2d0e4a11".into(),
                op: Op::Delete,
            },
        ],
    }
}

#[test]
fn wire_shape() {
    let v: Value = serde_json::from_slice(&delta(7, 8).to_json()).unwrap();
    assert_eq!(v["type"], "sluice_delta");
    assert_eq!(
        (v["base_version"].as_u64(), v["version"].as_u64()),
        (Some(7), Some(8))
    );
    assert_eq!(
        v["changes"],
        json!([{"kind": "routes", "id": "481a9539-f49c-51b6-b2e2-fe99ee68866c", "op": "upsert",
                "entity": {"id": "481a9539-f49c-51b6-b2e2-fe99ee68866c", "paths": ["/a"]}},
               {"kind": "plugins", "id": "ac1c3e2d-8c9f-5b7c-a10c-6f9e2d0e4a11", "op": "delete"}])
    );
    assert_eq!(v["hashes"]["routes"], "00000000000000000000000000000000");
}

#[test]
fn round_trips_through_the_gzip_envelope() {
    let d = delta(7, 8);
    assert_eq!(
        CpMessage::decode(&d.encode(), DEFAULT_MAX_PAYLOAD).unwrap(),
        CpMessage::Delta(d)
    );
    let r = Resync {
        version: Some(7),
        reason: "gap: have 7, delta applies on 9".into(),
    };
    assert_eq!(
        DpMessage::decode(&r.encode()).unwrap(),
        DpMessage::Resync(r.clone())
    );
    assert_eq!(Resync::decode(&r.encode()).unwrap(), r);
    let bad = br#"{"type":"sluice_delta","changes":[{"kind":"routes","id":"x","op":"rename"}]}"#;
    let z = crate::gzip::deflate(bad);
    assert!(matches!(
        CpMessage::decode(&z, DEFAULT_MAX_PAYLOAD),
        Err(FrameError::Json { .. })
    ));
}

#[test]
fn negotiated_by_fields_kong_ignores() {
    let hello: BasicInfo = BasicInfo::decode(
        br#"{"type":"basic_info","plugins":[],"sluice":{"capabilities":["delta.v1","later"]}}"#,
    )
    .unwrap();
    assert!(hello.offers_deltas());
    let other = BasicInfo::decode(
        br#"{"type":"basic_info","plugins":[],"sluice":{"capabilities":["delta.v2"]}}"#,
    )
    .unwrap();
    assert!(!other.offers_deltas());
    let mut full = crate::frames::cp::Reconfigure::new(json!({}), 0.0);
    full.sluice = Some(SluiceFull { version: 7 });
    let v: Value = serde_json::from_slice(&full.to_json()).unwrap();
    assert_eq!(v["sluice"], json!({"version": 7}));
}

#[test]
fn applies_only_on_the_exact_base() {
    assert_eq!(check(Some(7), &delta(7, 8)), Verdict::Apply);
    assert_eq!(
        check(Some(7), &delta(7, 12)),
        Verdict::Apply,
        "versions may skip numbers"
    );
    assert_eq!(check(Some(8), &delta(7, 8)), Verdict::Stale);
    assert_eq!(check(Some(9), &delta(7, 8)), Verdict::Stale);
    assert_eq!(
        check(Some(7), &delta(9, 10)),
        Verdict::Resync("gap: have 7, delta applies on 9".into())
    );
    assert_eq!(
        check(Some(8), &delta(7, 9)),
        Verdict::Resync("gap: have 8, delta applies on 7".into())
    );
    assert!(matches!(check(None, &delta(7, 8)), Verdict::Resync(_)));
    assert!(matches!(check(Some(7), &delta(7, 7)), Verdict::Resync(_)));
}
