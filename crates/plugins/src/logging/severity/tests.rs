//! Unit tests of `severity`: the status classes, `log_level`, and the tag byte.

use super::*;

#[test]
fn each_status_class_gets_its_severity_and_log_level_filters() {
    // log_level warning (4): info (6) is not sent, warning (4) and crit (2) are.
    let s = Severities::new("warning", "info", "warning", "crit").unwrap();
    for (status, expected) in [
        (100, None),
        (200, None),
        (302, None),
        (399, None),
        (400, Some(4)),
        (404, Some(4)),
        (499, Some(4)),
        (500, Some(2)),
        (502, Some(2)),
        (599, Some(2)),
    ] {
        assert_eq!(s.of(status), expected, "status {status}");
    }
    let all = Severities::new("debug", "debug", "emerg", "alert").unwrap();
    assert_eq!(
        (all.of(200), all.of(401), all.of(503)),
        (Some(7), Some(0), Some(1))
    );
    // Kong's defaults: everything at info, sent at log_level info.
    let defaults = Severities::new("info", "info", "info", "info").unwrap();
    assert_eq!(
        (defaults.of(200), defaults.of(404), defaults.of(500)),
        (Some(6), Some(6), Some(6))
    );
    assert!(Severities::new("verbose", "info", "info", "info").is_err());
}

#[test]
fn the_severity_travels_after_the_json() {
    assert_eq!(split(b"{\"a\":1}\x03"), (&b"{\"a\":1}"[..], 3));
    assert_eq!(split(b"{}\x00"), (&b"{}"[..], 0));
}

#[test]
fn the_field_takes_kongs_eight_names() {
    let schema = sluice_model::schema::Schema::new(vec![("s", field())]);
    let filled = schema.validate(&serde_json::json!({})).unwrap();
    assert_eq!(filled["s"], "info");
    for name in NAMES {
        schema
            .validate(&serde_json::json!({ "s": name }))
            .unwrap_or_else(|e| panic!("{name}: {e:?}"));
    }
    assert!(schema.validate(&serde_json::json!({"s": "error"})).is_err());
}
