//! Unit tests of the per-route chains: a config without plugins keeps no per-route list (what a DB-mode
//! node would otherwise build and free for every route on each write), and every route still gets the
//! chain that applies to it.
use crate::testing::compile;

const ROUTES: &str = r#"_format_version: "3.0"
services:
- name: a
  url: http://127.0.0.1:9
  routes:
  - {name: one, paths: [/one]}
  - {name: two, paths: [/two]}
  - {name: three, paths: [/three]}
"#;

#[test]
fn without_plugins_no_per_route_list_is_kept_and_every_chain_is_empty() {
    let (config, compiled) = compile(ROUTES);
    assert_eq!(config.routes.len(), 3);
    assert!(compiled.routes.is_empty(), "one empty chain per route");
    assert!(compiled.route_metrics.is_empty(), "one None per route");
    for i in 0..3 {
        assert!(compiled.route_chain(i).is_empty());
        assert_eq!(compiled.route_metrics(i), None);
    }
}

#[test]
fn with_plugins_every_route_runs_the_global_ones_and_its_own() {
    let scoped = ROUTES.replace(
        "{name: two, paths: [/two]}",
        "{name: two, paths: [/two], plugins: [{name: request-size-limiting}]}",
    );
    let yaml = format!("{scoped}plugins:\n- name: cors\n- name: prometheus\n");
    let (_, compiled) = compile(&yaml);
    for (i, chained) in [1, 2, 1].into_iter().enumerate() {
        assert_eq!(compiled.route_chain(i).len(), chained, "route {i}");
        assert!(compiled.route_metrics(i).is_some(), "route {i}: metered");
    }
}
