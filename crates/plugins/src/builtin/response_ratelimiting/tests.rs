//! The usage header's grammar and the schema's rules.

use super::*;
use crate::registry::Registry;

fn rules(limits: &[&str]) -> Rules {
    Rules {
        usage_header: HeaderName::from_static("x-kong-limit"),
        block_on_first_violation: false,
        hide_client_headers: false,
        limits: limits
            .iter()
            .map(|n| Limit {
                name: n.to_string(),
                upstream_h: HeaderName::from_static("x-a"),
                windows: Vec::new(),
            })
            .collect(),
    }
}

fn spent(p: &Rules, lines: &[&str]) -> Vec<i64> {
    let mut headers = http::HeaderMap::new();
    for l in lines {
        headers.append("x-kong-limit", l.parse().unwrap());
    }
    p.spent(&headers)
}

#[test]
fn the_usage_header_is_read_as_kong_reads_it() {
    let p = rules(&["images", "videos"]);
    assert_eq!(spent(&p, &["videos=2, images = 3"]), vec![3, 2]);
    assert_eq!(spent(&p, &["videos=2", "images=1"]), vec![1, 2]);
    // Unknown names, two `=`, non-integers and empty parts are ignored.
    assert_eq!(
        spent(&p, &["other=5, videos=1=2, images=1.5, , =3"]),
        vec![0, 0]
    );
    assert_eq!(spent(&p, &[]), vec![0, 0]);
}

fn check(config: &str) -> Result<(), String> {
    let yaml = format!(
        "_format_version: \"3.0\"\nplugins:\n- name: response-ratelimiting\n  config: {config}\n"
    );
    sluice_model::declarative::parse(&yaml, &Registry::builtin())
        .map(|_| ())
        .map_err(|e| format!("{e:?}"))
}

#[test]
fn the_schema_has_kongs_rules() {
    check("{limits: {videos: {minute: 10, hour: 100}}}").unwrap();
    let err = check("{limits: {}}").unwrap_err();
    assert!(err.contains("limits"), "{err}");
    let err = check("{limits: {videos: {}}}").unwrap_err();
    assert!(err.contains("at least one of these fields"), "{err}");
    let err = check("{limits: {videos: {minute: 10, hour: 5}}}").unwrap_err();
    assert!(
        err.contains("the limit for hour(5.0) cannot be lower than the limit for minute(10.0)"),
        "{err}"
    );
    let err = check("{policy: redis, limits: {videos: {minute: 1}}}").unwrap_err();
    assert!(err.contains("redis.host"), "{err}");
    check("{policy: redis, redis: {host: 127.0.0.1}, limits: {videos: {minute: 1}}}").unwrap();
    let err = check("{policy: cluster, limits: {videos: {minute: 1}}}").unwrap_err();
    assert!(err.contains("needs a database"), "{err}");
}
