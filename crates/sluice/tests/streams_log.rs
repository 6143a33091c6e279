//! The log phase of L4 stream sessions through the real binary (Kong's stream subsystem): a TCP session
//! and a UDP session through routes carrying file-log, http-log and prometheus each give one record at
//! close, in Kong's stream shape (`session`, `upstream`, `latencies.session`, `tries`, no `request` or
//! `response`) with the bytes that moved, and a count and a duration in `/metrics` under Kong's stream
//! names; a route whose log plugins do not list its protocol logs nothing; a refused client's session
//! is logged with nginx's stream status 403; a `tls` session's record names the TLS the gateway
//! terminated; datadog counts a session (statsd, whose Kong handler fails on stream records, does not
//! run); zipkin reports a session as Kong's `stream` spans.

use serde_json::{json, Value};
use sluice_testkit::{
    client, free_tcp_port, free_udp_port, insecure_client, self_signed, Gateway, LogSink,
    TcpLineEcho, UdpEcho,
};
use std::path::Path;
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpStream, UdpSocket};
use tokio_rustls::rustls::pki_types::ServerName;

const BIN: &str = env!("CARGO_BIN_EXE_sluice");
const WAIT: Duration = Duration::from_secs(10);

/// The log plugins of a logged route, all listing both stream protocols.
fn logged_plugins(file: &Path, sink: &LogSink) -> Value {
    json!([
        {"name": "file-log", "protocols": ["tcp", "udp"], "config": {"path": file}},
        {"name": "http-log", "protocols": ["tcp", "udp"],
            "config": {"http_endpoint": sink.url("/"), "queue": {"max_coalescing_delay": 0.01}}},
        {"name": "prometheus", "protocols": ["tcp", "udp"],
            "config": {"status_code_metrics": true, "latency_metrics": true}},
    ])
}

/// Sends one line on a new connection, reads the answer, closes.
async fn tcp_session(port: u16, line: &str) -> String {
    let mut s = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    s.write_all(format!("{line}\n").as_bytes()).await.unwrap();
    let mut answer = String::new();
    let mut reader = BufReader::new(&mut s);
    tokio::time::timeout(WAIT, reader.read_line(&mut answer))
        .await
        .expect("an answer")
        .unwrap();
    answer
}

/// The JSON lines of `path` once there are `n` (or what there is after [`WAIT`]).
fn file_records(path: &Path, n: usize) -> Vec<Value> {
    let deadline = Instant::now() + WAIT;
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let records: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        if records.len() >= n || Instant::now() > deadline {
            return records;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Every record the sink received, batches unpacked, once there are `n`.
fn sink_records(sink: &LogSink, n: usize) -> Vec<Value> {
    let all = || -> Vec<Value> {
        sink.requests()
            .iter()
            .flat_map(|r| match r.json() {
                Value::Array(items) => items,
                one => vec![one],
            })
            .collect()
    };
    let deadline = Instant::now() + WAIT;
    while all().len() < n && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    all()
}

/// One session's record as Kong's stream serializer makes it.
fn assert_session(r: &Value, route: &str, received: u64, sent: u64, server_port: u16) {
    let s = &r["session"];
    assert_eq!(s["status"], 200, "{r}");
    assert_eq!(s["received"], received, "{r}");
    assert_eq!(s["sent"], sent, "{r}");
    assert_eq!(s["server_port"], server_port, "{r}");
    assert!(s.get("tls").is_none(), "{r}");
    assert_eq!(
        r["upstream"],
        json!({"received": sent, "sent": received}),
        "{r}"
    );
    assert!(
        r["latencies"]["session"].is_u64() && r["latencies"]["kong"].is_u64(),
        "{r}"
    );
    assert_eq!(r["route"]["name"], route, "{r}");
    assert_eq!(r["tries"].as_array().map(Vec::len), Some(1), "{r}");
    assert_eq!(r["tries"][0]["ip"], "127.0.0.1", "{r}");
    assert_eq!(r["client_ip"], "127.0.0.1");
    assert!(r["started_at"].as_u64() > Some(1_600_000_000_000), "{r}");
    assert_eq!(r["workspace_name"], "default");
    for http_only in ["request", "response", "upstream_uri", "source", "consumer"] {
        assert!(r.get(http_only).is_none(), "{http_only} in {r}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tcp_and_udp_sessions_are_logged_and_counted_at_close() {
    let (tcp_echo, udp_echo) = (TcpLineEcho::start("tcp"), UdpEcho::start("udp"));
    let (tcp_port, excluded_port, udp_port) = (free_tcp_port(), free_tcp_port(), free_udp_port());
    let dir = tempfile::tempdir().unwrap();
    let (logged, excluded) = (
        dir.path().join("logged.log"),
        dir.path().join("excluded.log"),
    );
    let sink = LogSink::start();
    let config = json!({
        "_format_version": "3.0",
        "services": [
            {"name": "tcp-svc", "protocol": "tcp", "host": "127.0.0.1", "port": tcp_echo.port(),
             "routes": [
                {"name": "tcp-logged", "protocols": ["tcp"], "destinations": [{"port": tcp_port}],
                 "plugins": logged_plugins(&logged, &sink)},
                {"name": "tcp-excluded", "protocols": ["tcp"], "destinations": [{"port": excluded_port}],
                 "plugins": [
                    {"name": "file-log", "protocols": ["udp"], "config": {"path": excluded}},
                    {"name": "http-log", "config": {"http_endpoint": sink.url("/")}},
                    {"name": "prometheus", "protocols": ["udp"], "config": {"status_code_metrics": true}},
                 ]}]},
            {"name": "udp-svc", "protocol": "udp", "host": "127.0.0.1", "port": udp_echo.port(),
             "read_timeout": 300,
             "routes": [{"name": "udp-logged", "protocols": ["udp"],
                "destinations": [{"port": udp_port}], "plugins": logged_plugins(&logged, &sink)}]},
        ],
    });
    let listen =
        format!("127.0.0.1:{tcp_port}, 127.0.0.1:{excluded_port}, 127.0.0.1:{udp_port} udp");
    let gw = Gateway::builder(BIN)
        .workers(2)
        .env("SLUICE_STREAM_LISTEN", &listen)
        .config_yaml(&config.to_string())
        .start();

    assert_eq!(tcp_session(tcp_port, "hello").await, "tcp hello\n");
    assert_eq!(tcp_session(excluded_port, "nobody").await, "tcp nobody\n");
    let udp = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    udp.send_to(b"ping", ("127.0.0.1", udp_port)).await.unwrap();
    let mut buf = [0u8; 64];
    let n = tokio::time::timeout(WAIT, udp.recv(&mut buf))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(&buf[..n], b"udp ping");

    // One record per logged session (the UDP one when it has been idle for its read_timeout), in the
    // file and at the HTTP sink alike.
    let by_route = |mut records: Vec<Value>| {
        records.sort_by_key(|r| r["route"]["name"].as_str().unwrap_or_default().to_string());
        records
    };
    let in_file = by_route(file_records(&logged, 2));
    let at_sink = by_route(sink_records(&sink, 2));
    for records in [&in_file, &at_sink] {
        assert_eq!(records.len(), 2, "{records:?}\n{}", gw.log());
        assert_session(&records[0], "tcp-logged", 6, 10, tcp_port);
        assert_eq!(records[0]["service"]["name"], "tcp-svc");
        assert_eq!(records[0]["tries"][0]["port"], tcp_echo.port());
        assert_session(&records[1], "udp-logged", 4, 8, udp_port);
        assert_eq!(records[1]["tries"][0]["port"], udp_echo.port());
    }

    let metrics = client()
        .get(gw.status_url("/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    for line in [
        "# TYPE kong_stream_sessions_total counter",
        r#"kong_stream_sessions_total{service="tcp-svc",route="tcp-logged",code="200",source="service",workspace="default"} 1"#,
        r#"kong_stream_sessions_total{service="udp-svc",route="udp-logged",code="200",source="service",workspace="default"} 1"#,
        "# TYPE kong_session_duration_ms histogram",
        r#"kong_session_duration_ms_count{service="tcp-svc",route="tcp-logged",workspace="default"} 1"#,
        r#"kong_session_duration_ms_count{service="udp-svc",route="udp-logged",workspace="default"} 1"#,
        r#"kong_kong_latency_ms_count{service="udp-svc",route="udp-logged",workspace="default"} 1"#,
    ] {
        assert!(metrics.contains(line), "{line}\n{metrics}");
    }

    // The excluded route's plugins list no tcp (file-log, prometheus: udp only; http-log: Kong's HTTP
    // default): its session ran none of them.
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        !excluded.exists(),
        "file-log ran on a protocol it does not list"
    );
    assert_eq!(sink_records(&sink, 2).len(), 2, "http-log ran on a stream");
    assert!(!metrics.contains("tcp-excluded"), "{metrics}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_session_is_logged_with_status_403() {
    let echo = TcpLineEcho::start("tcp");
    let port = free_tcp_port();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("refused.log");
    let config = json!({
        "_format_version": "3.0",
        "services": [{"name": "tcp-svc", "protocol": "tcp", "host": "127.0.0.1", "port": echo.port(),
            "routes": [{"name": "guarded", "protocols": ["tcp"], "destinations": [{"port": port}],
                "plugins": [
                    {"name": "ip-restriction", "protocols": ["tcp"], "config": {"deny": ["127.0.0.1"]}},
                    {"name": "file-log", "protocols": ["tcp"], "config": {"path": path}},
                ]}]}],
    });
    let gw = Gateway::builder(BIN)
        .env("SLUICE_STREAM_LISTEN", &format!("127.0.0.1:{port}"))
        .config_yaml(&config.to_string())
        .start();
    let mut s = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    let _ = s.write_all(b"hi\n").await;
    let records = file_records(&path, 1);
    assert_eq!(records.len(), 1, "{}", gw.log());
    let r = &records[0];
    assert_eq!(r["session"]["status"], 403, "{r}");
    assert_eq!(r["session"]["received"], 0, "{r}");
    assert!(r.get("tries").is_none(), "{r}");
    assert_eq!(r["route"]["name"], "guarded");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_terminated_tls_session_names_its_tls() {
    let echo = TcpLineEcho::start("tls");
    let cert = self_signed(&["term.test"]);
    let port = free_tcp_port();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tls.log");
    let config = json!({
        "_format_version": "3.0",
        "certificates": [{"cert": cert.cert_pem, "key": cert.key_pem, "snis": [{"name": "term.test"}]}],
        "services": [{"name": "tls-svc", "protocol": "tcp", "host": "127.0.0.1", "port": echo.port(),
            "routes": [{"name": "terminated", "protocols": ["tls"], "snis": ["term.test"],
                "plugins": [{"name": "file-log", "protocols": ["tls"], "config": {"path": path}}]}]}],
    });
    let gw = Gateway::builder(BIN)
        .env("SLUICE_STREAM_LISTEN", &format!("127.0.0.1:{port} ssl"))
        .config_yaml(&config.to_string())
        .start();
    let tcp = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    let name = ServerName::try_from("term.test").unwrap();
    let mut s = tokio_rustls::TlsConnector::from(insecure_client(&[], false))
        .connect(name, tcp)
        .await
        .unwrap();
    s.write_all(b"hello\n").await.unwrap();
    let mut answer = String::new();
    tokio::time::timeout(WAIT, BufReader::new(&mut s).read_line(&mut answer))
        .await
        .expect("an answer")
        .unwrap();
    assert_eq!(answer, "tls hello\n");
    drop(s);
    let records = file_records(&path, 1);
    assert_eq!(records.len(), 1, "{}", gw.log());
    let r = &records[0];
    assert_eq!(r["session"]["status"], 200, "{r}");
    assert_eq!(r["session"]["tls"]["version"], "TLSv1.3", "{r}");
    assert!(
        r["session"]["tls"]["cipher"]
            .as_str()
            .is_some_and(|c| c.starts_with("TLS_")),
        "{r}"
    );
    assert_eq!(r["session"]["received"], 6, "decrypted bytes: {r}");
    assert_eq!(r["route"]["name"], "terminated");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn datadog_counts_a_session_and_statsd_does_not_run() {
    let echo = TcpLineEcho::start("tcp");
    let port = free_tcp_port();
    let (datadog, statsd) = (
        UdpSocket::bind("127.0.0.1:0").await.unwrap(),
        UdpSocket::bind("127.0.0.1:0").await.unwrap(),
    );
    let config = json!({
        "_format_version": "3.0",
        "services": [{"name": "tcp.svc", "protocol": "tcp", "host": "127.0.0.1", "port": echo.port(),
            "routes": [{"name": "measured", "protocols": ["tcp"], "destinations": [{"port": port}],
                "plugins": [
                    {"name": "datadog", "protocols": ["tcp"], "config": {"host": "127.0.0.1",
                        "port": datadog.local_addr().unwrap().port(),
                        "queue": {"max_coalescing_delay": 0.01}}},
                    {"name": "statsd", "protocols": ["tcp"], "config": {"host": "127.0.0.1",
                        "port": statsd.local_addr().unwrap().port(),
                        "queue": {"max_coalescing_delay": 0.01}}},
                ]}]}],
    });
    let gw = Gateway::builder(BIN)
        .env("SLUICE_STREAM_LISTEN", &format!("127.0.0.1:{port}"))
        .config_yaml(&config.to_string())
        .start();
    assert_eq!(tcp_session(port, "hi").await, "tcp hi\n");
    let mut lines = Vec::new();
    let mut buf = [0u8; 2048];
    while lines.len() < 2 {
        let n = tokio::time::timeout(WAIT, datadog.recv(&mut buf))
            .await
            .unwrap_or_else(|_| panic!("datadog lines: {lines:?}\n{}", gw.log()))
            .unwrap();
        lines.extend(String::from_utf8_lossy(&buf[..n]).lines().map(String::from));
    }
    let shape = |l: &str| {
        let (name, rest) = l.split_once(':').unwrap();
        let (_, tail) = rest.split_once('|').unwrap();
        format!("{name}:N|{tail}")
    };
    let tags = "|#name:tcp_svc,status:-,app:kong";
    assert_eq!(
        lines.iter().map(|l| shape(l)).collect::<Vec<_>>(),
        [
            format!("kong.request.count:N|c{tags}"),
            format!("kong.kong_latency:N|ms{tags}"),
        ]
    );
    let silent = tokio::time::timeout(Duration::from_millis(500), statsd.recv(&mut buf)).await;
    assert!(silent.is_err(), "statsd sent on a stream");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zipkin_reports_a_session_as_kongs_stream_spans() {
    let echo = TcpLineEcho::start("tcp");
    let port = free_tcp_port();
    let sink = LogSink::start();
    let config = json!({
        "_format_version": "3.0",
        "services": [{"name": "tcp-svc", "protocol": "tcp", "host": "127.0.0.1", "port": echo.port(),
            "routes": [{"name": "traced", "protocols": ["tcp"], "destinations": [{"port": port}],
                "plugins": [{"name": "zipkin", "protocols": ["tcp"], "config": {
                    "http_endpoint": sink.url("/spans"), "sample_ratio": 1,
                    "static_tags": [{"name": "team", "value": "edge"}],
                    "queue": {"max_coalescing_delay": 0.01}}}]}]}],
    });
    let gw = Gateway::builder(BIN)
        .env("SLUICE_STREAM_LISTEN", &format!("127.0.0.1:{port}"))
        .config_yaml(&config.to_string())
        .start();
    assert_eq!(tcp_session(port, "hi").await, "tcp hi\n");
    let spans = sink_records(&sink, 3);
    assert_eq!(spans.len(), 3, "{spans:?}\n{}", gw.log());
    let names: Vec<&str> = spans.iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        ["stream (balancer try 1)", "stream (proxy)", "stream"]
    );
    let (attempt, proxy, session) = (&spans[0], &spans[1], &spans[2]);
    assert_eq!(session["kind"], "SERVER");
    assert!(session.get("parentId").is_none(), "{session}");
    assert_eq!(session["tags"]["lc"], "kong", "{session}");
    assert_eq!(session["tags"]["team"], "edge", "{session}");
    assert_eq!(session["remoteEndpoint"]["ipv4"], "127.0.0.1", "{session}");
    for child in [attempt, proxy] {
        assert_eq!(child["kind"], "CLIENT");
        assert_eq!(child["traceId"], session["traceId"]);
        assert_eq!(child["parentId"], session["id"]);
        assert_eq!(child["tags"]["kong.route_name"], "traced", "{child}");
        assert_eq!(child["remoteEndpoint"]["port"], echo.port(), "{child}");
    }
    assert_eq!(proxy["tags"]["peer.hostname"], "127.0.0.1", "{proxy}");
    let annotations: Vec<&str> = proxy["annotations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["value"].as_str().unwrap())
        .collect();
    assert_eq!(annotations, ["kps", "kpf"]);
    assert_eq!(attempt["tags"]["kong.balancer.try"], "1");
}
