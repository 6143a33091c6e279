//! Unit tests of `prometheus`.
use crate::testing::compile;

#[test]
fn the_most_specific_instance_decides_per_route_and_none_joins_a_chain() {
    let (_, compiled) = compile(
        r#"_format_version: "3.0"
services:
- name: a
  url: http://127.0.0.1:9
  plugins:
  - name: prometheus
    config: {latency_metrics: true}
  routes:
  - name: by-service
    paths: [/s]
  - name: by-route
    paths: [/r]
    plugins:
    - name: prometheus
      config: {bandwidth_metrics: true}
- name: b
  url: http://127.0.0.1:9
  routes:
  - name: by-global
    paths: [/g]
plugins:
- name: prometheus
  config: {status_code_metrics: true}
"#,
    );
    let flags = |i: usize| compiled.route_metrics(i).expect("metered");
    assert!(
        flags(0).latency && !flags(0).status_code,
        "service instance"
    );
    assert!(flags(1).bandwidth && !flags(1).latency, "route instance");
    assert!(
        flags(2).status_code && !flags(2).bandwidth,
        "global instance"
    );
    for i in 0..3 {
        assert!(
            compiled.route_chain(i).is_empty(),
            "prometheus keeps route {i} on the fast path"
        );
    }
}

#[test]
fn without_an_instance_nothing_is_metered() {
    let (_, compiled) = compile(
        "_format_version: \"3.0\"\nservices:\n- name: a\n  url: http://127.0.0.1:9\n  routes:\n  - {name: r, paths: [/]}\n",
    );
    assert!(compiled.route_metrics(0).is_none());
}
