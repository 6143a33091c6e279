//! Unit tests of `entities`: the `POST /config` reply built from the node's JSON equals the one built here.

use super::*;
use sluice_model::declarative::parse;
use sluice_model::records::for_each_record;

const YAML: &str = r#"
_format_version: "3.0"
services:
  - name: s1
    url: http://upstream.test:8080/base
    routes:
      - name: r1
        paths: [/one]
        plugins:
          - name: request-termination
            config: { status_code: 200, message: hi }
upstreams:
  - name: upstream.test
    targets: [{ target: 10.0.0.1:80 }]
consumers:
  - username: alice
    keyauth_credentials: [{ key: k1 }]
    acls: [{ group: admins }]
plugins:
  - name: key-auth
"#;

/// The entities' JSON as the node hands it over: per kind, in config order.
fn node_json(config: &Config) -> EntityJson {
    let mut out: EntityJson = Vec::new();
    for_each_record(config, |r| match out.last_mut() {
        Some((kind, bodies)) if *kind == r.kind => bodies.push(r.body),
        _ => out.push((r.kind, vec![r.body])),
    });
    out
}

#[test]
fn the_reply_from_the_nodes_json_is_the_reply_serialized_here() {
    let registry = sluice_plugins::Registry::builtin();
    let config = parse(YAML, &registry).unwrap_or_else(|e| panic!("{e}"));
    let json = node_json(&config);
    assert!(
        json.len() >= 7,
        "every kind is listed: {:?}",
        json.iter().map(|(k, _)| k).collect::<Vec<_>>()
    );
    let reply = by_schema(&config, Some(&json));
    assert_eq!(reply, by_schema(&config, None));
    let parsed: Value = serde_json::from_slice(&reply).unwrap();
    assert_eq!(
        parsed["routes"][config.routes[0].id.to_string()]["name"],
        "r1"
    );
    // A list that does not match the config (another length) is ignored, not misattributed.
    let mut short = json.clone();
    short[1].1.clear();
    assert_eq!(by_schema(&config, Some(&short)), reply);
}
