//! http-log's schema (Kong's fields, defaults, legacy fields, header rules) and queue sharing across reloads.

use super::*;
use crate::Registry;

fn config_with(plugin_config: &str) -> String {
    format!(
        r#"
_format_version: "3.0"
plugins:
- name: http-log
  config: {plugin_config}
"#
    )
}

fn load(registry: &Registry, plugin_config: &str) -> Result<sluice_model::Config, String> {
    sluice_model::declarative::parse(&config_with(plugin_config), registry)
        .map_err(|e| format!("{e:?}"))
}

#[test]
fn fills_kongs_defaults() {
    let config = load(
        &Registry::builtin(),
        "{http_endpoint: 'http://127.0.0.1:9/logs'}",
    )
    .unwrap();
    let c = &config.plugins[0].config;
    assert_eq!(c["method"], "POST");
    assert_eq!(c["content_type"], "application/json");
    assert_eq!(
        (c["timeout"].as_f64(), c["keepalive"].as_f64()),
        (Some(10000.0), Some(60000.0))
    );
    let typed: Config = typed_config(&config.plugins[0]).unwrap();
    assert_eq!(typed.queue, QueueConfig::default());
}

#[test]
fn refuses_what_kong_refuses() {
    let registry = Registry::builtin();
    for (bad, expected) in [
        ("{}", "required field missing"),
        ("{http_endpoint: 'ftp://x/'}", "invalid url"),
        ("{http_endpoint: 'not a url'}", "missing host in url"),
        (
            "{http_endpoint: 'http://x/', method: GET}",
            "expected one of",
        ),
        (
            "{http_endpoint: 'http://x/', headers: {Host: a}}",
            "cannot contain 'Host' header",
        ),
        (
            "{http_endpoint: 'http://x/', headers: {content-type: a}}",
            "cannot contain 'Content-Type'",
        ),
        (
            "{http_endpoint: 'http://u:p@x/', headers: {Authorization: a}}",
            "both an 'Authorization' header and user info",
        ),
        (
            "{http_endpoint: 'http://x/', queue: {max_batch_size: 0}}",
            "max_batch_size",
        ),
        (
            "{http_endpoint: 'http://x/', queue: {concurrency_limit: 2}}",
            "-1, 1",
        ),
        (
            "{http_endpoint: 'http://x/', custom_fields_by_lua: {a: 'return 1'}}",
            "does not run Lua",
        ),
    ] {
        let err = load(&registry, bad).expect_err(bad);
        assert!(err.contains(expected), "{bad}: {err}");
    }
    load(
        &registry,
        "{http_endpoint: 'https://u:p@x:8443/a?b=1', custom_fields_by_lua: {}}",
    )
    .unwrap();
}

#[test]
fn legacy_fields_map_onto_the_queue_like_kong() {
    let config = load(
        &Registry::builtin(),
        "{http_endpoint: 'http://x/', queue_size: 50, flush_timeout: 0.5, retry_count: 3}",
    )
    .unwrap();
    let typed: Config = typed_config(&config.plugins[0]).unwrap();
    let q = effective_queue(&typed);
    assert_eq!((q.max_batch_size, q.max_coalescing_delay), (50, 0.5));
    let config = load(
        &Registry::builtin(),
        "{http_endpoint: 'http://x/', queue_size: 1, flush_timeout: 2, queue: {max_batch_size: 7}}",
    )
    .unwrap();
    let typed: Config = typed_config(&config.plugins[0]).unwrap();
    assert_eq!(
        effective_queue(&typed).max_batch_size,
        7,
        "Kong's old defaults change nothing"
    );
}

#[test]
fn reloads_keep_the_queue_of_an_unchanged_config_and_free_the_others() {
    let registry = Registry::builtin();
    let a = load(&registry, "{http_endpoint: 'http://127.0.0.1:9/a'}").unwrap();
    let b = load(&registry, "{http_endpoint: 'http://127.0.0.1:9/b'}").unwrap();
    let first = registry.compile(&a).unwrap();
    let again = registry.compile(&a).unwrap();
    assert_eq!(
        registry.state().log_queues().len(),
        1,
        "same config, same queue"
    );
    drop(first);
    drop(again);
    let mut live = registry.compile(&b).unwrap();
    for i in 0..50 {
        let next = registry.compile(if i % 2 == 0 { &a } else { &b }).unwrap();
        live = next;
    }
    drop(live);
    assert_eq!(
        registry.state().log_queues().len(),
        0,
        "no queue outlives its snapshots"
    );
}
