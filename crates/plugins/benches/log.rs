//! The log phase on the proxy worker: serializing Kong's log record (with the route and service JSON cached
//! per snapshot, and serialized per request for comparison), and the whole file-log `log()` (serialize + push
//! onto the queue; the `sluice-log` thread writes to /dev/null meanwhile).

use criterion::{criterion_group, criterion_main, Criterion};
use http::{HeaderMap, HeaderValue};
use sluice_plugins::logging::entities::EntityJson;
use sluice_plugins::logging::response_headers::ResponseHeaders;
use sluice_plugins::logging::serialize::serialize;
use sluice_plugins::testing::{compile, request};
use sluice_plugins::{LogRecord, RequestCtx};
use std::hint::black_box;

const CONFIG: &str = r#"
_format_version: "3.0"
services:
- name: s
  url: http://127.0.0.1:1
  routes:
  - name: logged
    paths: [/logged]
    plugins:
    - {name: file-log, config: {path: /dev/null}}
"#;

fn record() -> LogRecord {
    let mut response_headers = HeaderMap::new();
    for (k, v) in [
        ("content-type", "application/json"),
        ("content-length", "512"),
        ("date", "Mon, 23 Nov 2026 09:00:00 GMT"),
        ("x-kong-upstream-latency", "3"),
        ("x-kong-proxy-latency", "0"),
        ("via", "1.1 sluice/0.1.0"),
    ] {
        response_headers.insert(k, HeaderValue::from_static(v));
    }
    LogRecord {
        status: 200,
        response_headers: ResponseHeaders::of(&response_headers),
        request_bytes: 0,
        response_bytes: 512,
        kong_latency_ms: 0,
        upstream_latency_ms: Some(3),
        request_latency_ms: 3,
        tries: vec![sluice_plugins::TryRecord {
            addr: "127.0.0.1:8080".parse().unwrap(),
            started: std::time::Instant::now(),
            latency: std::time::Duration::from_micros(40),
            failed: None,
        }]
        .into(),
        upstream_uri: Some(String::from("/items?page=2&sort=name")),
        source: "upstream",
    }
}

fn bench(c: &mut Criterion) {
    let (config, compiled) = compile(CONFIG);
    let head = request(
        "GET",
        "/logged/items?page=2&sort=name",
        &[
            ("host", "api.example.test"),
            ("user-agent", "curl/8.5.0"),
            ("accept", "*/*"),
            ("x-request-id", "5b1d3a1e-4c1f-4f0e-9d55-1a2b3c4d5e6f"),
            ("authorization", "Bearer abc"),
        ],
    );
    let mut ctx = RequestCtx::detached(head, compiled.credentials());
    ctx.route = config.routes.first();
    ctx.service = config.services.first();
    let rec = record();
    let entities = EntityJson::build(&config);
    let none = EntityJson::default();
    let chain = compiled.route_chain(0);
    let mut group = c.benchmark_group("log");
    group.bench_function("serialize-entities-per-request", |b| {
        b.iter(|| black_box(serialize(black_box(&ctx), black_box(&rec), &none)))
    });
    group.bench_function("serialize", |b| {
        b.iter(|| black_box(serialize(black_box(&ctx), black_box(&rec), &entities)))
    });
    group.bench_function("file-log", |b| {
        b.iter(|| chain.log(black_box(&ctx), black_box(&rec)))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
