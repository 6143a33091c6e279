//! What the tracing plugins cost a proxy worker per request: `access` (extract, sample, inject) and `log`
//! (spans built, encoded and queued when sampled), against a plain request context with no plugin. The
//! queues deliver to a closed port on the `sluice-log` thread and give failures up at once, so they drain.

use criterion::{criterion_group, criterion_main, Criterion};
use sluice_plugins::testing::{block_on, compile, request};
use sluice_plugins::{LogRecord, RequestCtx};
use std::hint::black_box;

const QUEUE: &str = "queue: {max_entries: 1000000, max_retry_time: -1}";

fn config() -> String {
    let plugin = |path: &str, plugin: &str| {
        format!("  - {{name: r{path}, paths: [/{path}], plugins: [{plugin}]}}\n")
    };
    let endpoint = "http://127.0.0.1:9/v1/traces";
    format!(
        "_format_version: \"3.0\"\nservices:\n- name: s\n  url: http://127.0.0.1:1\n  routes:\n{}{}{}{}",
        plugin("none", ""),
        plugin("otel1", &format!("{{name: opentelemetry, config: {{traces_endpoint: '{endpoint}', sampling_rate: 1, {QUEUE}}}}}")),
        plugin("otel0", &format!("{{name: opentelemetry, config: {{traces_endpoint: '{endpoint}', sampling_rate: 0, {QUEUE}}}}}")),
        plugin("zipkin1", &format!("{{name: zipkin, config: {{http_endpoint: '{endpoint}', sample_ratio: 1, {QUEUE}}}}}")),
    )
}

fn record() -> LogRecord {
    LogRecord {
        status: 200,
        response_headers: Default::default(),
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
        upstream_uri: Some("/items".into()),
        source: "upstream",
    }
}

fn bench(c: &mut Criterion) {
    let (config, compiled) = compile(&config());
    let head = request(
        "GET",
        "/items?page=2",
        &[
            ("host", "api.example.test"),
            ("user-agent", "curl/8.5.0"),
            (
                "traceparent",
                "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            ),
        ],
    );
    let rec = record();
    let mut group = c.benchmark_group("tracing");
    for (i, name) in ["none", "otel-sampled", "otel-unsampled", "zipkin-sampled"]
        .iter()
        .enumerate()
    {
        let chain = compiled.route_chain(i);
        group.bench_function(*name, |b| {
            b.iter(|| {
                let mut ctx = RequestCtx::detached(head.clone(), compiled.credentials());
                ctx.route = config.routes.get(i);
                ctx.service = config.services.first();
                black_box(block_on(chain.access(&mut ctx)).is_none());
                chain.log(black_box(&ctx), black_box(&rec));
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
