//! Unit tests of `EntityJson`: a request record's route and service members kept together are the bytes the
//! members written one by one make, and the pair is only used with the service it was made for.

use super::*;
use crate::testing::compile;

const CONFIG: &str = r#"
_format_version: "3.0"
services:
- name: one
  url: http://one.internal/base
  tags: [a, "q\"uote"]
  routes:
  - name: r1
    paths: [/one]
- name: two
  url: http://two.internal
routes:
- name: serviceless
  paths: [/none]
"#;

/// The members as written one by one, without the kept pair (from an `EntityJson` that has none).
fn one_by_one(route: Option<&Route>, service: Option<&Service>) -> Vec<u8> {
    let mut out = Vec::new();
    EntityJson::default().write_route_and_service(&mut out, route, service);
    out
}

#[test]
fn a_routes_pair_is_its_members_written_one_by_one() {
    let (config, _) = compile(CONFIG);
    let entities = EntityJson::build(&config);
    let route = config
        .routes
        .iter()
        .find(|r| r.name.as_deref() == Some("r1"));
    let serviceless = config
        .routes
        .iter()
        .find(|r| r.name.as_deref() == Some("serviceless"));
    let (one, two) = (config.services.first(), config.services.get(1));
    assert_eq!(entities.pairs.len(), 1, "only the route with a service");
    for (route, service) in [
        (route, one),
        // Another service than the route's own: not the kept pair.
        (route, two),
        (route, None),
        (serviceless, two),
        (None, one),
        (None, None),
    ] {
        let mut out = Vec::new();
        entities.write_route_and_service(&mut out, route, service);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            String::from_utf8(one_by_one(route, service)).unwrap()
        );
    }
    let mut out = b"{\"a\":1".to_vec();
    entities.write_route_and_service(&mut out, route, one);
    out.push(b'}');
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(v["route"]["name"], "r1");
    assert_eq!(v["service"]["name"], "one");
    assert_eq!(v["service"]["tags"][1], "q\"uote");
}
