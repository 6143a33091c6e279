//! Byte-for-byte guard of the log record: a rich request record (repeated and redacted headers, escapes,
//! invalid UTF-8, a repeated query argument, TLS, a consumer and its credential, a failed and an answering
//! try, latencies) and a stream session record are compared with the bytes the serializers wrote before
//! they were tuned for speed (`golden.json`, `golden-session.json`). Any change to a field, its order, its
//! escaping or a number's format fails here; a deliberate format change regenerates them with
//! `SLUICE_WRITE_GOLDEN=1 cargo test -p sluice-plugins golden`.

use super::*;
use crate::logging::response_headers::ResponseHeaders;
use crate::logging::session::serialize_session;
use crate::stream::SessionRecord;
use crate::testing::{compile, request};
use crate::{CredentialRef, TryRecord};
use http::HeaderValue;
use std::time::{Duration, SystemTime};

const CONFIG: &str = r#"
_format_version: "3.0"
services:
- name: svc.example
  id: 5f1c1b8e-4a47-4f3a-9d0c-3a2b1c0d9e8f
  url: https://backend.internal:8443/base
  tags: [a, b]
  created_at: 1600000000
  updated_at: 1600000001
  routes:
  - name: r
    id: 8a2e3c4d-1b0f-4e5d-8c7b-6a5f4e3d2c1b
    paths: [/p]
    methods: [GET, POST]
    hosts: [gw.test]
    created_at: 1600000002
    updated_at: 1600000003
consumers:
- username: alice
  id: 0c9d8e7f-6a5b-4c3d-2e1f-0a9b8c7d6e5f
  custom_id: "alice-1"
  tags: [vip]
  created_at: 1600000004
  updated_at: 1600000005
  keyauth_credentials: [{key: k}]
"#;

/// Compares `out` with the golden file `name` next to this one (or rewrites it when asked).
fn check(name: &str, out: &[u8]) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("src/logging/serialize")
        .join(name);
    if std::env::var_os("SLUICE_WRITE_GOLDEN").is_some() {
        std::fs::write(&path, out).unwrap();
    }
    let golden = std::fs::read(&path).unwrap();
    assert_eq!(
        String::from_utf8_lossy(out),
        String::from_utf8_lossy(&golden),
        "the record differs from {name}"
    );
}

fn tries(started: Instant) -> Vec<TryRecord> {
    vec![
        TryRecord {
            addr: "10.200.3.45:8443".parse().unwrap(),
            started: started + Duration::from_micros(2_345),
            latency: Duration::from_micros(1_500_250),
            failed: Some(502),
        },
        TryRecord {
            addr: "[2001:db8::7]:9".parse().unwrap(),
            started: started + Duration::from_millis(1_510),
            latency: Duration::from_nanos(20_017),
            failed: None,
        },
    ]
}

#[test]
fn a_rich_request_record_is_what_it_always_was() {
    let (config, compiled) = compile(CONFIG);
    let req = request(
        "POST",
        "/p/x?a=1&b=x+y%21&a=2&flag&=skip&q=%22quoted%22",
        &[
            ("host", "gw.test:8000"),
            ("authorization", "Basic secret"),
            ("proxy-authorization", "one"),
            ("proxy-authorization", "two"),
            ("x-multi", "1"),
            ("x-multi", "2"),
            ("x-multi", "3"),
            ("user-agent", "curl/8.5.0 \"quoted\" \\ back"),
            ("accept", "*/*"),
            ("content-length", "5"),
            (
                "x-long",
                "abcdefghijklmnopqrstuvwxyz0123456789-abcdefghijklmnop",
            ),
        ],
    );
    let mut ctx = RequestCtx::detached(req, compiled.credentials());
    ctx.request
        .headers
        .append("x-bytes", HeaderValue::from_bytes(b"caf\xe9 \tok").unwrap());
    ctx.request_id = "5c0d3e5e8f0a4b6c9d2e1f3a4b5c6d7e";
    ctx.route = config.routes.first();
    ctx.service = config.services.first();
    ctx.consumer = config.consumers.first();
    ctx.credential = Some(CredentialRef {
        id: uuid::Uuid::from_u128(0x1234_5678_9abc_def0_1234_5678_9abc_def0),
        plugin: "key-auth",
    });
    ctx.started_wall = SystemTime::UNIX_EPOCH + Duration::from_nanos(1_700_000_000_123_456_789);
    ctx.server_port = 8443;
    ctx.scheme = "https";
    ctx.client_ip = "192.168.100.254".parse().unwrap();
    ctx.tls = Some(sluice_tls::Negotiated {
        version: "TLSv1.3",
        cipher: "TLS_AES_128_GCM_SHA256",
    });
    let mut response_headers = HeaderMap::new();
    for (name, value) in [
        ("content-type", "application/json"),
        ("set-cookie", "a=1; Path=/"),
        ("set-cookie", "b=2"),
        ("set-cookie", "c=\"3\""),
        ("via", "1.1 sluice"),
        ("x-kong-upstream-latency", "11"),
        ("x-kong-proxy-latency", "3"),
        ("content-length", "7"),
    ] {
        response_headers.append(name, HeaderValue::from_static(value));
    }
    let record = LogRecord {
        status: 201,
        response_headers: ResponseHeaders::of(&response_headers),
        request_bytes: 5,
        response_bytes: 7,
        kong_latency_ms: 3,
        upstream_latency_ms: Some(11),
        request_latency_ms: 1_520,
        tries: tries(ctx.started).into(),
        upstream_uri: Some("/base/x?a=1&b=x+y%21".into()),
        source: "upstream",
    };
    check(
        "golden.json",
        &serialize(&ctx, &record, &EntityJson::build(&config)),
    );
    check(
        "golden.json",
        &serialize(&ctx, &record, &EntityJson::default()),
    );
}

#[test]
fn a_stream_session_record_is_what_it_always_was() {
    let (config, _) = compile(CONFIG);
    let started = Instant::now();
    let session = SessionRecord {
        protocol: sluice_router::stream::StreamProtocols::TLS,
        route: config.routes.first(),
        service: config.services.first(),
        client: "192.168.100.254:40000".parse().unwrap(),
        server_port: 9443,
        tls: Some(sluice_tls::Negotiated {
            version: "TLSv1.2",
            cipher: "ECDHE-RSA-AES128-GCM-SHA256",
        }),
        status: 200,
        received: 1_234,
        sent: 56_789,
        started,
        started_wall: SystemTime::UNIX_EPOCH + Duration::from_nanos(1_700_000_000_987_654_321),
        kong_latency_ms: 2,
        session_ms: 1_600,
        tries: tries(started),
    };
    let entities = EntityJson::build(&config);
    let with_tls = serialize_session(&session, &entities);
    check("golden-session.json", &with_tls);
    let plain = SessionRecord {
        tls: None,
        ..session
    };
    let tls = r#""tls":{"version":"TLSv1.2","cipher":"ECDHE-RSA-AES128-GCM-SHA256","client_verify":"NONE"},"#;
    assert_eq!(
        String::from_utf8_lossy(&serialize_session(&plain, &entities)),
        String::from_utf8_lossy(&with_tls).replacen(tls, "", 1),
        "without TLS, the same record less its tls member"
    );
}
