//! Unit tests of `serialize`.
use super::*;
use crate::logging::response_headers::ResponseHeaders;
use crate::testing::{compile, request};
use crate::{CredentialRef, TryRecord};
use http::HeaderValue;
use serde_json::{json, Value};
use std::time::{Duration, Instant, SystemTime};

const CONFIG: &str = r#"
_format_version: "3.0"
services:
- name: svc
  url: http://127.0.0.1:9/base
  routes:
  - name: r
    paths: [/p]
consumers:
- username: alice
  keyauth_credentials: [{key: k}]
"#;

fn record(source: &'static str, upstream: bool) -> LogRecord {
    let mut response_headers = HeaderMap::new();
    response_headers.insert("content-type", HeaderValue::from_static("application/json"));
    response_headers.append("set-cookie", HeaderValue::from_static("a=1"));
    response_headers.append("set-cookie", HeaderValue::from_static("b=2"));
    LogRecord {
        status: 201,
        response_headers: ResponseHeaders::of(&response_headers),
        request_bytes: 5,
        response_bytes: 7,
        kong_latency_ms: 3,
        upstream_latency_ms: upstream.then_some(11),
        request_latency_ms: 20,
        tries: match upstream {
            true => vec![
                TryRecord {
                    addr: "127.0.0.1:8".parse().unwrap(),
                    started: Instant::now(),
                    latency: Duration::from_micros(1500),
                    failed: Some(502),
                },
                TryRecord {
                    addr: "[::1]:9".parse().unwrap(),
                    started: Instant::now(),
                    latency: Duration::from_micros(20),
                    failed: None,
                },
            ],
            false => Vec::new(),
        }
        .into(),
        upstream_uri: upstream.then(|| "/base/x?a=1".into()),
        source,
    }
}

#[test]
fn writes_kongs_basic_log_shape() {
    let (config, compiled) = compile(CONFIG);
    let req = request(
        "POST",
        "/p/x?a=1&b=x+y%21&a=2&flag&=skip",
        &[
            ("host", "gw.test:8000"),
            ("authorization", "Basic secret"),
            ("x-multi", "1"),
            ("x-multi", "2"),
            ("content-length", "5"),
        ],
    );
    let mut ctx = RequestCtx::detached(req, compiled.credentials());
    ctx.route = config.routes.first();
    ctx.service = config.services.first();
    ctx.consumer = config.consumers.first();
    let cred_id = uuid::Uuid::nil();
    ctx.credential = Some(CredentialRef {
        id: cred_id,
        plugin: "key-auth",
    });
    ctx.started_wall = SystemTime::UNIX_EPOCH + Duration::from_millis(1_700_000_000_123);
    ctx.server_port = 9000;
    let rec = record("upstream", true);
    let cached = serialize(&ctx, &rec, &EntityJson::build(&config));
    let fresh = serialize(&ctx, &rec, &EntityJson::default());
    assert_eq!(
        String::from_utf8_lossy(&cached),
        String::from_utf8_lossy(&fresh),
        "cached entity JSON is what serializing them gives"
    );
    let v: Value = serde_json::from_slice(&cached).unwrap();

    let r = &v["request"];
    assert_eq!(r["uri"], "/p/x?a=1&b=x+y%21&a=2&flag&=skip");
    assert_eq!(
        r["url"], "http://gw.test:9000/p/x?a=1&b=x+y%21&a=2&flag&=skip",
        "the listener's port, not the Host header's"
    );
    assert_eq!(r["method"], "POST");
    assert_eq!(
        r["querystring"],
        json!({"a": ["1", "2"], "b": "x y!", "flag": true})
    );
    assert_eq!(r["headers"]["authorization"], "REDACTED");
    assert_eq!(r["headers"]["x-multi"], json!(["1", "2"]));
    assert_eq!(r["headers"]["host"], "gw.test:8000");
    assert_eq!(r["id"], ctx.request_id);
    // "POST <uri> HTTP/1.1\r\n" + 5 header lines + "\r\n" + the 5 body bytes.
    let head = 4 + 1 + 32 + 11 + (4 + 16) + (13 + 16) + 2 * (7 + 5) + (14 + 5) + 2;
    assert_eq!(r["size"], head + 5);

    assert_eq!(v["response"]["status"], 201);
    assert_eq!(
        v["response"]["headers"]["set-cookie"],
        json!(["a=1", "b=2"])
    );
    let status_line = "HTTP/1.1 201 Created\r\n".len();
    let resp_head = status_line + (12 + 2 + 16 + 2) + 2 * (10 + 2 + 3 + 2) + 2;
    assert_eq!(v["response"]["size"], resp_head as u64 + 7);
    assert_eq!(v["upstream_status"], "201");
    assert_eq!(
        v["latencies"],
        json!({"kong": 3, "proxy": 11, "request": 20, "receive": 6})
    );
    let tries = v["tries"].as_array().unwrap();
    assert_eq!(tries.len(), 2);
    assert_eq!(
        (&tries[0]["ip"], &tries[0]["port"]),
        (&json!("127.0.0.1"), &json!(8))
    );
    assert_eq!(
        (&tries[0]["state"], &tries[0]["code"]),
        (&json!("failed"), &json!(502))
    );
    assert_eq!(tries[0]["balancer_latency"], 1);
    assert_eq!(tries[0]["balancer_latency_ns"], 1_500_000);
    assert_eq!(
        (&tries[1]["ip"], &tries[1]["port"]),
        (&json!("::1"), &json!(9))
    );
    assert!(
        tries[1].get("state").is_none(),
        "the answering try did not fail"
    );
    let start = tries[1]["balancer_start"].as_u64().unwrap();
    assert!(
        start >= 1_700_000_000_123,
        "wall clock from the request's start: {start}"
    );
    assert_eq!(v["upstream_uri"], "/base/x?a=1");
    assert_eq!(v["workspace_name"], "default");
    assert_eq!(v["workspace"], DEFAULT_WORKSPACE_ID);
    assert!(r.get("tls").is_none(), "plain HTTP has no tls");
    assert_eq!(v["route"]["name"], "r");
    assert_eq!(v["service"]["name"], "svc");
    assert_eq!(v["consumer"]["username"], "alice");
    assert_eq!(
        v["authenticated_entity"],
        json!({"id": cred_id, "consumer_id": config.consumers[0].id})
    );
    assert_eq!(v["client_ip"], "127.0.0.1");
    assert_eq!(v["started_at"], 1_700_000_000_123u64);
    assert_eq!(v["source"], "upstream");
}

#[test]
fn gateway_made_responses_have_no_upstream_facts_and_no_absent_entities() {
    let (_, compiled) = compile(CONFIG);
    let ctx = RequestCtx::detached(request("GET", "/nowhere", &[]), compiled.credentials());
    for source in ["plugin", "gateway"] {
        let v: Value = serde_json::from_slice(&serialize(
            &ctx,
            &record(source, false),
            &EntityJson::default(),
        ))
        .unwrap();
        assert_eq!(v["source"], "kong");
        assert_eq!(v["upstream_status"], "");
        assert_eq!(v["latencies"]["proxy"], -1);
        assert_eq!(v["request"]["querystring"], json!({}));
        for absent in [
            "tries",
            "upstream_uri",
            "route",
            "service",
            "consumer",
            "authenticated_entity",
        ] {
            assert!(v.get(absent).is_none(), "{absent} is left out");
        }
    }
}

#[test]
fn https_requests_name_their_tls_version_and_cipher() {
    let (_, compiled) = compile(CONFIG);
    let mut ctx = RequestCtx::detached(request("GET", "/p", &[]), compiled.credentials());
    ctx.scheme = "https";
    ctx.tls = Some(sluice_tls::Negotiated {
        version: "TLSv1.3",
        cipher: "TLS_AES_128_GCM_SHA256",
    });
    let out = serialize(&ctx, &record("upstream", true), &EntityJson::default());
    let v: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(
        v["request"]["tls"],
        json!({"version": "TLSv1.3", "cipher": "TLS_AES_128_GCM_SHA256", "client_verify": "NONE"})
    );
    assert!(v["request"]["url"]
        .as_str()
        .unwrap()
        .starts_with("https://"));
}

/// A try's `balancer_latency` and `_ns` (and `balancer_start`'s) come from one formatted number: the
/// milliseconds are what `as_millis` gives, also below one millisecond and at zero.
#[test]
fn millis_and_nanos_agree_with_as_millis_and_as_nanos() {
    for nanos in [
        0,
        1,
        999_999,
        1_000_000,
        1_500_000,
        12_345_678_901,
        1_700_000_000_123_456_789,
    ] {
        let d = Duration::from_nanos(nanos);
        let mut out = b"{\"a\":1".to_vec();
        super::millis_and_nanos(&mut out, (b",\"t\":", b",\"t_ns\":"), d);
        out.push(b'}');
        let v: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(
            v,
            json!({"a": 1, "t": d.as_millis() as u64, "t_ns": nanos}),
            "{nanos}"
        );
    }
}

/// The host of `url` taken at once (a lower-case name or IPv4 address, with or without a port) is what
/// `bare_host` and the escaping writer make of it, for those and for the hosts it leaves to them.
#[test]
fn plain_hosts_are_written_as_bare_host_writes_them() {
    for host in [
        "127.0.0.1:8000",
        "gw.test",
        "gw.test:",
        "a:b:c",
        "my-host.example.com:443",
        "",
        "GW.Test:8000",
        "[::1]:8000",
        "[2001:db8::7]",
        "we\"ird:1",
        "caf\u{e9}.test:80",
    ] {
        let mut fast = Vec::new();
        super::host::host_text(&mut fast, host);
        let mut general = Vec::new();
        json::text(&mut general, &sluice_router::bare_host(host));
        assert_eq!(
            String::from_utf8(fast).unwrap(),
            String::from_utf8(general).unwrap(),
            "{host}"
        );
        // From the request: its `Host` field, first or not, or an absolute-form target's authority.
        let authority = match host.is_empty() || host.contains(['"', '\u{e9}']) {
            true => "http://fallback.test:81/x",
            false => "/x",
        };
        for first in [true, false] {
            let mut req = http::Request::get(authority);
            if !first {
                req = req.header("x-before", "1");
            }
            let (parts, ()) = req.header("host", host).body(()).unwrap().into_parts();
            let mut from_request = Vec::new();
            super::host::request_host_text(&mut from_request, &parts);
            let mut expected = Vec::new();
            super::host::host_text(&mut expected, super::raw_host(&parts));
            assert_eq!(from_request, expected, "{host} {first}");
        }
    }
}

/// A target without a query (or with an empty one) has the empty `querystring` object written with the
/// method's key in one fragment: the same bytes as the general writer's, which a query with no usable
/// argument also comes to.
#[test]
fn targets_without_a_query_write_what_the_query_writer_writes() {
    let (_, compiled) = compile(CONFIG);
    let member = |target: &str| {
        let ctx = RequestCtx::detached(request("GET", target, &[]), compiled.credentials());
        let out = String::from_utf8(serialize(
            &ctx,
            &record("kong", false),
            &EntityJson::default(),
        ))
        .unwrap();
        let start = out.find(",\"querystring\":").unwrap();
        let end = out.find(",\"headers\":").unwrap();
        out[start..end].to_string()
    };
    let mut general = b",\"querystring\":".to_vec();
    super::querystring(&mut general, "");
    general.extend_from_slice(b",\"method\":\"GET\"");
    let general = String::from_utf8(general).unwrap();
    for target in ["/p", "/p?", "/p?&&", "/p?=x"] {
        assert_eq!(member(target), general, "{target}");
    }
    assert_eq!(
        member("/p?a=1&b"),
        r#","querystring":{"a":"1","b":true},"method":"GET""#
    );
}
