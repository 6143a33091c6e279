//! The access phase of whole plugin chains on one request, so the cost each plugin adds is visible:
//! an empty chain (building the request context only), rate-limiting, key-auth + rate-limiting,
//! basic-auth + rate-limiting, the cors + request-transformer pair, and hmac-auth + rate-limiting (a
//! request signed over its date and request line with hmac-sha256). Counters use the `local` policy;
//! limits are high enough never to trigger.

use criterion::{criterion_group, criterion_main, Criterion};
use sluice_plugins::testing::{block_on, compile, request};
use sluice_plugins::RequestCtx;
use std::hint::black_box;

const CONFIG: &str = r#"
_format_version: "3.0"
services:
- name: s
  url: http://127.0.0.1:1
  routes:
  - name: none
    paths: [/none]
  - name: rate-limiting
    paths: [/rl]
    plugins:
    - {name: rate-limiting, config: {second: 1000000000000, policy: local}}
  - name: key-auth_rate-limiting
    paths: [/key]
    plugins:
    - {name: key-auth}
    - {name: rate-limiting, config: {second: 1000000000000, policy: local}}
  - name: basic-auth_rate-limiting
    paths: [/basic]
    plugins:
    - {name: basic-auth}
    - {name: rate-limiting, config: {second: 1000000000000, policy: local}}
  - name: cors_request-transformer
    paths: [/transform]
    plugins:
    - {name: cors, config: {origins: ["https://a.test", "(.*)\\.b\\.test"]}}
    - name: request-transformer
      config: {add: {headers: ["x-a:1"], querystring: ["q:1"]}, remove: {headers: [x-b]}}
  - name: hmac-auth_rate-limiting
    paths: [/hmac]
    plugins:
    - {name: hmac-auth}
    - {name: rate-limiting, config: {second: 1000000000000, policy: local}}
consumers:
- username: alice
  keyauth_credentials: [{key: alice-key}]
  basicauth_credentials: [{username: alice, password: s3cret}]
  hmacauth_credentials: [{username: alice, secret: s3cret}]
"#;

/// `Date` (now) and an `Authorization` signing it and the request line of `GET {uri}` with hmac-sha256.
fn hmac_headers(uri: &str) -> (String, String) {
    use base64::Engine;
    use hmac::Mac;
    let date = httpdate::fmt_http_date(std::time::SystemTime::now());
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(b"s3cret").unwrap();
    mac.update(format!("date: {date}\nGET {uri} HTTP/1.1").as_bytes());
    let signature = base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes());
    let auth = format!(
        r#"hmac username="alice", algorithm="hmac-sha256", headers="date request-line", signature="{signature}""#
    );
    (date, auth)
}

fn bench(c: &mut Criterion) {
    let (config, compiled) = compile(CONFIG);
    let (date, auth) = hmac_headers("/hmac");
    let cases = [
        ("none", "/none", vec![]),
        ("rate-limiting", "/rl", vec![]),
        (
            "key-auth+rate-limiting",
            "/key",
            vec![("apikey", "alice-key")],
        ),
        (
            "basic-auth+rate-limiting",
            "/basic",
            vec![("authorization", "Basic YWxpY2U6czNjcmV0")],
        ),
        (
            "cors+request-transformer",
            "/transform?x=1",
            vec![("origin", "https://x.b.test"), ("x-b", "1")],
        ),
        (
            "hmac-auth+rate-limiting",
            "/hmac",
            vec![("date", date.as_str()), ("authorization", auth.as_str())],
        ),
    ];
    let mut group = c.benchmark_group("access");
    for (index, (name, uri, headers)) in cases.iter().enumerate() {
        let chain = compiled.route_chain(index);
        let head = request("GET", uri, headers);
        let run = || {
            let mut ctx = RequestCtx::detached(head.clone(), compiled.credentials());
            ctx.route = config.routes.get(index);
            let answer = block_on(chain.access(&mut ctx));
            (answer, ctx.consumer.is_some())
        };
        let (answer, identified) = run();
        assert!(
            answer.is_none(),
            "{name}: the chain must let the request through"
        );
        assert_eq!(identified, name.contains("auth"), "{name}: consumer");
        group.bench_function(*name, |b| b.iter(|| black_box(run())));
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
