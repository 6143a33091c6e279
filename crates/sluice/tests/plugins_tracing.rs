//! opentelemetry and zipkin through the real binary: OTLP/HTTP protobuf at a real receiver, decoded by
//! Python's `opentelemetry-proto` (independent of Sluice's encoder); Zipkin v2 JSON spans and their
//! layout; tracing headers in and out through the proxy (the upstream sees the injected headers with the
//! incoming trace id); a dead or failing receiver never holds requests up.

use serde_json::{json, Value};
use sluice_testkit::{client, closed_port, EchoUpstream, Gateway, LogSink};
use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_sluice");
const WAIT: Duration = Duration::from_secs(10);
const TRACE: &str = "0af7651916cd43dd8448eb211c80319c";
const SPAN: &str = "b7ad6b7169203331";

/// Spans of one OTLP request body, decoded by `plugins_tracing/otlp_decode.py`.
fn decode_otlp(body: &[u8]) -> Vec<Value> {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/plugins_tracing/otlp_decode.py"
    );
    let mut child = Command::new("python3")
        .arg(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3");
    child.stdin.take().unwrap().write_all(body).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "decoding failed (pip install opentelemetry-proto): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Waits until the receiver holds at least `n` spans (decoded with `decode`) and then a little longer for
/// stragglers, returning all of them.
fn wait_spans(sink: &LogSink, n: usize, decode: fn(&[u8]) -> Vec<Value>) -> Vec<Value> {
    let all = || -> Vec<Value> {
        sink.requests()
            .iter()
            .flat_map(|r| decode(&r.body))
            .collect()
    };
    let deadline = Instant::now() + WAIT;
    while all().len() < n && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(400));
    all()
}

fn zipkin_spans(body: &[u8]) -> Vec<Value> {
    match serde_json::from_slice(body) {
        Ok(Value::Array(spans)) => spans,
        other => panic!("a Zipkin batch is a JSON array: {other:?}"),
    }
}

/// GET `path` with `headers`; the status and the echo upstream's JSON (what it received).
async fn get(gw: &Gateway, path: &str, headers: &[(&str, &str)]) -> (u16, http::HeaderMap, Value) {
    let mut req = client().get(gw.proxy_url(path));
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let resp = req.send().await.expect("proxied request");
    let (status, head) = (resp.status().as_u16(), resp.headers().clone());
    (status, head, resp.json().await.unwrap_or(Value::Null))
}

fn named<'a>(spans: &'a [Value], name: &str) -> Vec<&'a Value> {
    spans.iter().filter(|s| s["name"] == name).collect()
}

/// A service on `up` behind an upstream whose first target is a closed port (round-robin on one worker:
/// of two requests, at least one tries the dead target first), with route `/t` carrying `plugins`.
fn config(up: u16, plugins: &str) -> String {
    format!(
        r#"_format_version: "3.0"
upstreams:
- name: pair
  targets: [{{target: "127.0.0.1:{dead}"}}, {{target: "127.0.0.1:{up}"}}]
services:
- name: svc
  host: pair
  routes:
  - name: traced
    paths: [/t]
    plugins: {plugins}
  - name: quiet
    paths: [/q]
consumers:
- username: alice
  keyauth_credentials: [{{key: alice-key}}]
"#,
        dead = closed_port()
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opentelemetry_exports_kongs_spans_over_otlp_protobuf() {
    let up = EchoUpstream::start();
    let otlp = LogSink::start();
    let plugin = json!([{"name": "opentelemetry", "config": {
        "traces_endpoint": otlp.url("/v1/traces"),
        "headers": {"x-otlp-token": "secret"},
        "resource_attributes": {"service.name": "edge", "deployment.environment": "test"},
        "sampling_rate": 1,
        "queue": {"max_coalescing_delay": 0.1},
    }}]);
    let gw = Gateway::builder(BIN)
        .workers(1)
        .config_yaml(&config(up.port(), &plugin.to_string()))
        .start();

    let traceparent = format!("00-{TRACE}-{SPAN}-01");
    let mut upstream_spans = Vec::new();
    for _ in 0..2 {
        let (status, _, seen) = get(&gw, "/t/a?x=1", &[("traceparent", &traceparent)]).await;
        assert_eq!(status, 200);
        let sent = seen["headers"]["traceparent"]
            .as_str()
            .expect("traceparent upstream")
            .to_string();
        let parts: Vec<&str> = sent.split('-').collect();
        assert_eq!(
            (parts[0], parts[1], parts[3]),
            ("00", TRACE, "01"),
            "{sent}"
        );
        assert_ne!(
            parts[2], SPAN,
            "the upstream's parent is Sluice's span, not the client's"
        );
        upstream_spans.push(parts[2].to_string());
    }

    let spans = wait_spans(&otlp, 5, decode_otlp);
    let got = otlp.requests();
    assert_eq!(got[0].headers["content-type"], "application/x-protobuf");
    assert_eq!(got[0].headers["x-otlp-token"], "secret");
    assert_eq!(got[0].path, "/v1/traces");
    let roots = named(&spans, "kong");
    let balancers = named(&spans, "kong.balancer");
    let failed: Vec<_> = balancers.iter().filter(|b| b["status"] == 2).collect();
    assert!(
        !failed.is_empty(),
        "a try hit the closed port: {balancers:#?}"
    );
    assert_eq!(
        (roots.len(), balancers.len()),
        (2, 2 + failed.len()),
        "{spans:#?}"
    );
    for s in &spans {
        assert_eq!(s["trace_id"], TRACE);
        assert_eq!(s["scope"], json!(["kong-internal", "0.1.0"]));
        assert_eq!(s["resource"]["service.name"], "edge");
        assert_eq!(s["resource"]["deployment.environment"], "test");
        assert!(s["end"].as_u64() >= s["start"].as_u64());
    }
    for root in &roots {
        assert_eq!(
            (root["parent"].as_str(), root["kind"].as_i64()),
            (Some(SPAN), Some(2))
        );
        let a = &root["attributes"];
        assert_eq!(a["http.method"], "GET");
        assert_eq!(a["http.url"], "http://127.0.0.1/t/a?x=1");
        assert_eq!(
            (a["http.host"].as_str(), a["http.scheme"].as_str()),
            (Some("127.0.0.1"), Some("http"))
        );
        assert_eq!(
            (a["http.flavor"].as_str(), a["http.route"].as_str()),
            (Some("1.1"), Some("/t"))
        );
        assert_eq!(a["http.status_code"], 200, "an int value");
        assert_eq!(
            (a["net.peer.ip"].as_str(), a["http.client_ip"].as_str()),
            (Some("127.0.0.1"), Some("127.0.0.1"))
        );
        assert!(a["kong.request.id"]
            .as_str()
            .is_some_and(|id| !id.is_empty()));
    }
    let root_ids: Vec<&str> = roots
        .iter()
        .map(|r| r["span_id"].as_str().unwrap())
        .collect();
    assert!(failed
        .iter()
        .all(|f| f["attributes"]["http.status_code"] == 502));
    for b in &balancers {
        assert_eq!(b["kind"], 3);
        assert!(
            root_ids.contains(&b["parent"].as_str().unwrap()),
            "a child of its request's span"
        );
        assert_eq!(b["attributes"]["net.peer.ip"], "127.0.0.1");
        assert_eq!(b["attributes"]["net.peer.name"], "pair");
        if b["status"] != 2 {
            assert_eq!(b["attributes"]["net.peer.port"], up.port() as f64);
            let id = b["span_id"].as_str().unwrap().to_string();
            assert!(
                upstream_spans.contains(&id),
                "the answering try's span is the one sent upstream"
            );
        }
    }
    let second_try = balancers
        .iter()
        .filter(|b| b["attributes"]["try_count"] == 2.0)
        .count();
    assert_eq!(
        second_try,
        failed.len(),
        "each failed first try is followed by a second"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sampled_out_requests_propagate_but_export_nothing() {
    let up = EchoUpstream::start();
    let otlp = LogSink::start();
    let plugin = json!([{"name": "opentelemetry", "config": {
        "traces_endpoint": otlp.url("/v1/traces"), "sampling_rate": 0,
        "queue": {"max_coalescing_delay": 0.05},
        "http_response_header_for_traceid": "x-trace-id",
    }}]);
    let gw = Gateway::builder(BIN)
        .workers(1)
        .config_yaml(&config(up.port(), &plugin.to_string()))
        .start();
    let (status, head, seen) = get(&gw, "/t", &[]).await;
    assert_eq!(status, 200);
    let sent = seen["headers"]["traceparent"]
        .as_str()
        .expect("propagated anyway");
    assert!(sent.ends_with("-00"), "not sampled: {sent}");
    assert_eq!(head["x-trace-id"].to_str().unwrap(), &sent[3..35]);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(otlp.count(), 0, "nothing exported");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zipkin_reports_kongs_span_layout_as_json_v2() {
    let up = EchoUpstream::start();
    let zipkin = LogSink::start();
    let plugins = json!([
        {"name": "key-auth"},
        {"name": "zipkin", "config": {
            "http_endpoint": zipkin.url("/api/v2/spans"), "sample_ratio": 1,
            "static_tags": [{"name": "env", "value": "test"}],
            "default_service_name": "fallback",
            "queue": {"max_batch_size": 10, "max_coalescing_delay": 0.1},
        }}
    ]);
    let gw = Gateway::builder(BIN)
        .workers(1)
        .config_yaml(&config(up.port(), &plugins.to_string()))
        .start();
    let incoming = [
        ("x-b3-traceid", TRACE),
        ("x-b3-spanid", SPAN),
        ("x-b3-sampled", "1"),
        ("apikey", "alice-key"),
        ("zipkin-tags", "team=edge; broken"),
    ];
    let mut proxy_ids = Vec::new();
    for _ in 0..2 {
        let (status, _, seen) = get(&gw, "/t/path", &incoming).await;
        assert_eq!(status, 200);
        let h = &seen["headers"];
        assert_eq!(
            h["x-b3-traceid"], TRACE,
            "the incoming trace goes on upstream"
        );
        assert_eq!(
            h["x-b3-parentspanid"], SPAN,
            "B3 shares the client's span: it is the request span"
        );
        assert_eq!(h["x-b3-sampled"], "1");
        proxy_ids.push(h["x-b3-spanid"].as_str().unwrap().to_string());
    }
    let spans = wait_spans(&zipkin, 7, zipkin_spans);
    assert_eq!(
        zipkin.requests()[0].headers["content-type"],
        "application/json"
    );
    let requests = named(&spans, "GET");
    let proxies = named(&spans, "GET (proxy)");
    let tries: Vec<_> = spans
        .iter()
        .filter(|s| s["name"].as_str().unwrap().starts_with("GET (balancer try"))
        .collect();
    let failed: Vec<_> = tries
        .iter()
        .filter(|t| t["tags"]["error"] == "true")
        .collect();
    assert!(!failed.is_empty(), "a try hit the closed port: {tries:#?}");
    assert_eq!(
        (requests.len(), proxies.len(), tries.len()),
        (2, 2, 2 + failed.len()),
        "{spans:#?}"
    );
    for s in &spans {
        assert_eq!(s["traceId"], TRACE);
        assert_eq!(s["localEndpoint"], json!({"serviceName": "kong"}));
        assert!(
            s["timestamp"].as_u64().unwrap() > 1_600_000_000_000_000,
            "microseconds"
        );
        assert!(s["duration"].is_u64());
        assert!(
            s["tags"]
                .as_object()
                .unwrap()
                .values()
                .all(Value::is_string),
            "Zipkin tags are strings"
        );
    }
    for r in &requests {
        assert_eq!(
            (r["id"].as_str(), r["kind"].as_str()),
            (Some(SPAN), Some("SERVER"))
        );
        assert!(r.get("parentId").is_none());
        let t = &r["tags"];
        assert_eq!(
            (t["lc"].as_str(), t["http.method"].as_str()),
            (Some("kong"), Some("GET"))
        );
        assert_eq!(
            (t["http.path"].as_str(), t["http.host"].as_str()),
            (Some("/t/path"), Some("127.0.0.1"))
        );
        assert_eq!(
            (t["http.protocol"].as_str(), t["http.status_code"].as_str()),
            (Some("HTTP/1.1"), Some("200"))
        );
        assert_eq!(
            (t["env"].as_str(), t["team"].as_str()),
            (Some("test"), Some("edge"))
        );
        assert!(t["kong.consumer"].is_string() && t["kong.credential"].is_string());
        assert_eq!(r["remoteEndpoint"]["ipv4"], "127.0.0.1");
        assert_eq!(r["remoteEndpoint"]["serviceName"], "fallback");
        assert_eq!(r["annotations"][0]["value"], "krs");
    }
    for p in &proxies {
        assert_eq!(
            (p["kind"].as_str(), p["parentId"].as_str()),
            (Some("CLIENT"), Some(SPAN))
        );
        assert!(
            proxy_ids.contains(&p["id"].as_str().unwrap().to_string()),
            "the span sent upstream"
        );
        assert_eq!(p["tags"]["kong.service_name"], "svc");
        assert_eq!(p["tags"]["kong.route_name"], "traced");
        assert_eq!(p["tags"]["peer.hostname"], "pair");
        assert_eq!(
            p["remoteEndpoint"],
            json!({"serviceName": "svc", "port": up.port(), "ipv4": "127.0.0.1"})
        );
        let values: Vec<&str> = p["annotations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["value"].as_str().unwrap())
            .collect();
        assert_eq!(values, ["khs", "khf", "kbs", "kas", "kaf", "kbf"]);
    }
    for f in &failed {
        assert_eq!(f["name"], "GET (balancer try 1)");
        assert_eq!(f["tags"]["kong.balancer.state"], "failed");
        assert_eq!(f["tags"]["http.status_code"], "502");
    }
    assert!(tries
        .iter()
        .all(|t| t["parentId"] == SPAN && t["tags"]["kong.route"].is_string()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn propagation_reads_clears_and_writes_the_configured_formats() {
    let up = EchoUpstream::start();
    let plugins = json!([{"name": "opentelemetry", "config": {
        "traces_endpoint": "http://127.0.0.1:9/v1/traces", "sampling_rate": 1,
        "propagation": {"extract": ["aws", "w3c"], "clear": ["x-amzn-trace-id"],
                        "inject": ["w3c", "datadog", "gcp", "b3-single"], "default_format": "w3c"},
    }}]);
    let gw = Gateway::builder(BIN)
        .workers(1)
        .config_yaml(&config(up.port(), &plugins.to_string()))
        .start();
    let aws = format!(
        "Root=1-{}-{};Parent={SPAN};Sampled=1",
        &TRACE[..8],
        &TRACE[8..]
    );
    let (status, _, seen) = get(&gw, "/t", &[("x-amzn-trace-id", &aws)]).await;
    assert_eq!(status, 200);
    let h = &seen["headers"];
    assert!(h.get("x-amzn-trace-id").is_none(), "cleared: {h}");
    let traceparent = h["traceparent"].as_str().unwrap();
    assert!(traceparent.starts_with(&format!("00-{TRACE}-")) && traceparent.ends_with("-01"));
    let span = &traceparent[36..52];
    let low = u64::from_str_radix(&TRACE[16..], 16).unwrap().to_string();
    assert_eq!(h["x-datadog-trace-id"], low);
    assert_eq!(
        h["x-datadog-parent-id"],
        u64::from_str_radix(span, 16).unwrap().to_string()
    );
    assert_eq!(h["x-datadog-sampling-priority"], "1");
    let gcp = format!("{TRACE}/{};o=1", u64::from_str_radix(span, 16).unwrap());
    assert_eq!(h["x-cloud-trace-context"], gcp);
    assert!(h["b3"]
        .as_str()
        .unwrap()
        .starts_with(&format!("{TRACE}-{span}-1-")));

    // zipkin's default: B3 headers for a request that brought none, with a new trace.
    let plugins = json!([{"name": "zipkin", "config": {"sample_ratio": 0}}]);
    let gw = Gateway::builder(BIN)
        .workers(1)
        .config_yaml(&config(up.port(), &plugins.to_string()))
        .start();
    let (_, _, seen) = get(&gw, "/t", &[]).await;
    let h = &seen["headers"];
    assert_eq!(h["x-b3-traceid"].as_str().unwrap().len(), 32);
    assert_eq!(h["x-b3-sampled"], "0");
    let (_, _, seen) = get(
        &gw,
        "/t",
        &[("traceparent", &format!("00-{TRACE}-{SPAN}-01"))],
    )
    .await;
    let h = &seen["headers"];
    assert!(
        h["traceparent"]
            .as_str()
            .unwrap()
            .starts_with(&format!("00-{TRACE}-")),
        "preserve: {h}"
    );
    assert!(h.get("x-b3-traceid").is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dead_or_failing_receivers_do_not_hold_requests() {
    let up = EchoUpstream::start();
    let failing = LogSink::start();
    failing.set_status(500);
    let plugins = json!([
        {"name": "opentelemetry", "config": {
            "traces_endpoint": format!("http://127.0.0.1:{}/v1/traces", closed_port()),
            "sampling_rate": 1, "queue": {"max_coalescing_delay": 0.01}}},
        {"name": "zipkin", "config": {
            "http_endpoint": failing.url("/api/v2/spans"), "sample_ratio": 1,
            "queue": {"initial_retry_delay": 0.01, "max_retry_delay": 0.05}}},
    ]);
    let gw = Gateway::builder(BIN)
        .workers(1)
        .config_yaml(&config(up.port(), &plugins.to_string()))
        .start();
    let started = Instant::now();
    for _ in 0..40 {
        let (status, _, _) = get(&gw, "/q", &[]).await;
        assert_eq!(status, 200);
        let (status, _, seen) = get(&gw, "/t", &[]).await;
        assert_eq!(status, 200);
        assert!(
            seen["headers"]["x-b3-traceid"].is_string()
                || seen["headers"]["traceparent"].is_string()
        );
    }
    let elapsed = started.elapsed();
    assert!(
        elapsed < Duration::from_secs(5),
        "80 requests took {elapsed:?}"
    );
    let deadline = Instant::now() + WAIT;
    while failing.count() < 3 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        failing.count() >= 3,
        "the 500ing receiver was retried: {}",
        failing.count()
    );
    let (status, _, _) = get(&gw, "/t", &[]).await;
    assert_eq!(status, 200, "still serving");
}
