//! `/metrics` end to end: after a known mix of requests the prometheus families hold exact counts and bucket
//! placements, the output parses with a Prometheus text-format parser, and both listeners serve it.

use sluice_testkit::{client, get_json, EchoUpstream, Gateway};
use std::collections::HashMap;

const BIN: &str = env!("CARGO_BIN_EXE_sluice");

fn config(port: u16) -> String {
    format!(
        r#"_format_version: "3.0"
services:
- name: echo
  url: http://127.0.0.1:{port}
  routes:
  - name: fast
    paths: [/fast]
  - name: slow
    paths: [/slow]
  - name: locked
    paths: [/locked]
    plugins:
    - name: key-auth
  - name: logged
    paths: [/logged]
    plugins:
    - name: file-log
      config:
        path: /dev/null
plugins:
- name: prometheus
  config:
    status_code_metrics: true
    latency_metrics: true
    bandwidth_metrics: true
"#
    )
}

/// Parses the exposition with a real Prometheus parser and indexes samples by `name{sorted labels}`.
fn parse(text: &str) -> HashMap<String, f64> {
    let lines = text.lines().map(|l| Ok(l.to_string()));
    let scrape = prometheus_parse::Scrape::parse(lines).expect("valid Prometheus text format");
    let mut out = HashMap::new();
    for s in scrape.samples {
        let mut labels: Vec<String> = s.labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
        labels.sort();
        let value = match s.value {
            prometheus_parse::Value::Counter(v)
            | prometheus_parse::Value::Gauge(v)
            | prometheus_parse::Value::Untyped(v) => v,
            prometheus_parse::Value::Histogram(buckets) => {
                for b in buckets {
                    let mut l = labels.clone();
                    l.push(format!("le={}", b.less_than));
                    l.sort();
                    out.insert(format!("{}_bucket{{{}}}", s.metric, l.join(",")), b.count);
                }
                continue;
            }
            prometheus_parse::Value::Summary(_) => continue,
        };
        out.insert(format!("{}{{{}}}", s.metric, labels.join(",")), value);
    }
    out
}

async fn scrape(url: &str) -> String {
    let resp = client().get(url).send().await.expect("scrape");
    assert_eq!(resp.status(), 200);
    resp.text().await.expect("body")
}

fn requests(route: &str, code: u16, source: &str) -> String {
    let service = if route.is_empty() { "" } else { "echo" };
    format!("kong_http_requests_total{{code={code},consumer=,route={route},service={service},source={source},workspace=default}}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prometheus_counts_a_known_mix_exactly() {
    let up = EchoUpstream::start();
    let gw = Gateway::builder(BIN)
        .config_yaml(&config(up.port()))
        .start();
    for _ in 0..3 {
        assert_eq!(get_json(&gw.proxy_url("/fast"), &[]).await.0, 200);
    }
    for _ in 0..2 {
        assert_eq!(
            get_json(&gw.proxy_url("/fast"), &[("x-echo-status", "503")])
                .await
                .0,
            503
        );
    }
    assert_eq!(
        get_json(&gw.proxy_url("/slow"), &[("x-echo-delay-ms", "120")])
            .await
            .0,
        200
    );
    assert_eq!(get_json(&gw.proxy_url("/locked"), &[]).await.0, 401);
    assert_eq!(get_json(&gw.proxy_url("/nowhere"), &[]).await.0, 404);
    // A route whose plugins only log (the proxy's log-only path) is counted too.
    for _ in 0..2 {
        assert_eq!(get_json(&gw.proxy_url("/logged"), &[]).await.0, 200);
    }

    let text = scrape(&gw.status_url("/metrics")).await;
    let m = parse(&text);
    let get = |k: &str| {
        m.get(k)
            .copied()
            .unwrap_or_else(|| panic!("no sample {k} in\n{text}"))
    };
    assert_eq!(get(&requests("fast", 200, "service")), 3.0);
    assert_eq!(get(&requests("fast", 503, "service")), 2.0);
    assert_eq!(get(&requests("slow", 200, "service")), 1.0);
    assert_eq!(get(&requests("locked", 401, "kong")), 1.0);
    // As Kong's exporter, a request that matched no route is not counted.
    assert!(!text.contains("route=\"\""), "{text}");
    assert_eq!(get(&requests("logged", 200, "service")), 2.0);

    let bucket = |family: &str, route: &str, le: &str| {
        get(&format!(
            "{family}_bucket{{le={le},route={route},service=echo,workspace=default}}"
        ))
    };
    // The slow request waited 120 ms upstream: above the 100 ms bound, within 250 ms.
    assert_eq!(bucket("kong_upstream_latency_ms", "slow", "100"), 0.0);
    assert_eq!(bucket("kong_upstream_latency_ms", "slow", "250"), 1.0);
    assert_eq!(bucket("kong_request_latency_ms", "slow", "100"), 0.0);
    assert_eq!(bucket("kong_request_latency_ms", "fast", "25"), 5.0);
    assert_eq!(bucket("kong_kong_latency_ms", "fast", "inf"), 5.0);
    // A 401 of a plugin has Kong's latency too (Kong's `latencies.kong` of an exit), and no upstream's.
    assert_eq!(bucket("kong_kong_latency_ms", "locked", "inf"), 1.0);
    let upstream_of = |route: &str| {
        m.keys().any(|k| {
            k.starts_with("kong_upstream_latency_ms_count")
                && k.contains(&format!("route={route},"))
        })
    };
    assert!(upstream_of("fast") && !upstream_of("locked"), "{text}");
    // Kong 3.9's bounds go on past 1000 ms to 3000 and 6000.
    assert_eq!(bucket("kong_kong_latency_ms", "fast", "6000"), 5.0);
    let egress = "kong_bandwidth_bytes{consumer=,direction=egress,route=fast,service=echo,workspace=default}";
    assert!(get(egress) > 0.0);
    assert_eq!(get("kong_datastore_reachable{}"), 1.0);
    assert!(get("sluice_config_loads_total{result=success}") >= 1.0);
    assert!(get("sluice_upstream_connections_total{kind=reused}") >= 1.0);

    let admin = client()
        .get(gw.admin_url("/metrics"))
        .send()
        .await
        .expect("admin scrape");
    assert_eq!(admin.status(), 200);
    assert!(admin
        .text()
        .await
        .unwrap_or_default()
        .contains("kong_http_requests_total"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_consumer_labels_requests_with_the_authenticated_consumer() {
    let up = EchoUpstream::start();
    let yaml = format!(
        r#"_format_version: "3.0"
services:
- name: echo
  url: http://127.0.0.1:{}
  routes:
  - name: keyed
    paths: [/keyed]
    plugins:
    - name: key-auth
consumers:
- username: alice
  keyauth_credentials:
  - key: alice-key
plugins:
- name: prometheus
  config:
    status_code_metrics: true
    bandwidth_metrics: true
    per_consumer: true
"#,
        up.port()
    );
    let gw = Gateway::builder(BIN).config_yaml(&yaml).start();
    for _ in 0..2 {
        let status = get_json(&gw.proxy_url("/keyed"), &[("apikey", "alice-key")])
            .await
            .0;
        assert_eq!(status, 200);
    }
    assert_eq!(get_json(&gw.proxy_url("/keyed"), &[]).await.0, 401);
    let text = scrape(&gw.status_url("/metrics")).await;
    let m = parse(&text);
    let key = |code: u16, source: &str, consumer: &str| {
        format!("kong_http_requests_total{{code={code},consumer={consumer},route=keyed,service=echo,source={source},workspace=default}}")
    };
    assert_eq!(m.get(&key(200, "service", "alice")), Some(&2.0), "{text}");
    assert_eq!(m.get(&key(401, "kong", "")), Some(&1.0), "{text}");
    // Bandwidth carries the consumer too, as in Kong.
    let bytes = |consumer: &str| {
        let k = format!("kong_bandwidth_bytes{{consumer={consumer},direction=ingress,route=keyed,service=echo,workspace=default}}");
        m.get(&k).copied().unwrap_or(0.0)
    };
    assert!(bytes("alice") > 0.0 && bytes("") > 0.0, "{text}");
    assert!(
        !text.contains("kong_request_latency_ms_bucket"),
        "latency_metrics is off"
    );
}

/// Sends `GET path` on a new connection and returns it (the response is not read).
fn send_raw(gw: &Gateway, path: &str, headers: &str) -> std::net::TcpStream {
    use std::io::Write;
    let mut s = std::net::TcpStream::connect(("127.0.0.1", gw.proxy_port())).unwrap();
    s.write_all(format!("GET {path} HTTP/1.1\r\nHost: t\r\n{headers}\r\n").as_bytes())
        .unwrap();
    s
}

/// Kong's ingress bytes are nginx's `$request_length`: the request line, the header lines, the blank line
/// and the body. Raw requests make every byte known.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ingress_bandwidth_counts_the_whole_request_as_nginx_does() {
    use std::io::{Read, Write};
    let up = EchoUpstream::start();
    let gw = Gateway::builder(BIN)
        .config_yaml(&config(up.port()))
        .start();
    let requests = [
        "GET /fast HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
        "POST /fast?a=1 HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello",
    ];
    for raw in requests {
        let mut s = std::net::TcpStream::connect(("127.0.0.1", gw.proxy_port())).unwrap();
        s.write_all(raw.as_bytes()).unwrap();
        let mut answer = Vec::new();
        s.read_to_end(&mut answer).unwrap();
        assert!(
            answer.starts_with(b"HTTP/1.1 200"),
            "{}",
            String::from_utf8_lossy(&answer)
        );
    }
    let text = scrape(&gw.status_url("/metrics")).await;
    let ingress = "kong_bandwidth_bytes{consumer=,direction=ingress,route=fast,service=echo,workspace=default}";
    let sent: usize = requests.iter().map(|r| r.len()).sum();
    assert_eq!(
        parse(&text).get(ingress).copied(),
        Some(sent as f64),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboards_node_families_count_connection_states_tasks_and_memory() {
    let up = EchoUpstream::start();
    let gw = Gateway::builder(BIN)
        .workers(1)
        .config_yaml(&config(up.port()))
        .start();
    // Two connections idle after a response, one silent, one waiting on a slow upstream.
    let mut idle = Vec::new();
    for _ in 0..2 {
        let mut s = send_raw(&gw, "/fast", "");
        let mut buf = [0u8; 12];
        std::io::Read::read_exact(&mut s, &mut buf).unwrap();
        idle.push(s);
    }
    let silent = std::net::TcpStream::connect(("127.0.0.1", gw.proxy_port())).unwrap();
    let busy = send_raw(&gw, "/slow", "x-echo-delay-ms: 3000\r\n");
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;

    let text = scrape(&gw.status_url("/metrics")).await;
    let m = parse(&text);
    let node = |state: &str| {
        m.iter()
            .find(|(k, _)| {
                k.starts_with("kong_nginx_connections_total{")
                    && k.contains(&format!("state={state},"))
            })
            .map(|(_, v)| *v)
            .unwrap_or_else(|| panic!("no state {state} in\n{text}"))
    };
    assert_eq!(node("active"), 4.0, "{text}");
    assert_eq!(node("writing"), 1.0, "{text}");
    assert_eq!(node("waiting"), 3.0, "{text}");
    assert_eq!(node("reading"), 0.0);
    assert!(node("total") >= 3.0);
    // The worker's tasks stand in for nginx's timers; the process's memory for the Lua VMs.
    assert!(m["kong_nginx_timers{state=running}"] >= 4.0, "{text}");
    assert!(m.contains_key("kong_nginx_timers{state=pending}"));
    let rss = m
        .iter()
        .find(|(k, _)| k.starts_with("kong_memory_workers_lua_vms_bytes{"))
        .map(|(_, v)| *v)
        .unwrap_or_else(|| panic!("no memory gauge in\n{text}"));
    assert!(rss > 1e6, "{rss}");
    // Kong's `GET /status` reports the same states.
    let (_, _, status) = get_json(&gw.status_url("/status"), &[]).await;
    assert_eq!(status["server"]["connections_writing"], 1, "{status}");
    assert_eq!(status["server"]["connections_waiting"], 3, "{status}");
    drop((idle, silent, busy));
}

/// Every series of the exposition as (name, labels), read line by line (histogram buckets keep `_bucket`).
fn series(text: &str) -> Vec<(String, HashMap<String, String>)> {
    let lines = text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty());
    lines
        .map(|l| {
            let (name, rest) = l.split_at(l.find(['{', ' ']).unwrap_or(l.len()));
            let labels = rest
                .strip_prefix('{')
                .and_then(|r| r.split_once('}'))
                .map_or("", |(inside, _)| inside);
            let labels = labels
                .split("\",")
                .filter_map(|kv| kv.split_once("=\""))
                .map(|(k, v)| (k.to_string(), v.trim_end_matches('"').to_string()))
                .collect();
            (name.to_string(), labels)
        })
        .collect()
}

/// A family, the labels its series must have, and one label with the values that must each have a series.
type Queried = (
    &'static str,
    &'static [&'static str],
    Option<(&'static str, &'static [&'static str])>,
);

/// The families Kong's official Grafana dashboard (kong/plugins/prometheus/grafana/kong-official.json,
/// Kong 3.9.1) queries, with the labels its queries select or group by, and the label values it names.
/// The shared-dict families hold proxy-cache's memory stores (docs/differences.md). Not here: the `type` label
/// one bandwidth panel groups by (no Kong family has it).
#[rustfmt::skip]
const DASHBOARD: &[Queried] = &[
    ("kong_http_requests_total", &["service", "route", "code"], None),
    ("kong_kong_latency_ms_bucket", &["service", "route", "le"], None),
    ("kong_request_latency_ms_bucket", &["service", "route", "le"], None),
    ("kong_upstream_latency_ms_bucket", &["service", "route", "le"], None),
    ("kong_bandwidth_bytes", &["direction", "service", "route"], Some(("direction", &["ingress", "egress"]))),
    ("kong_memory_workers_lua_vms_bytes", &[], None),
    ("kong_memory_lua_shared_dict_bytes", &["shared_dict"], None),
    ("kong_memory_lua_shared_dict_total_bytes", &["shared_dict"], None),
    ("kong_nginx_connections_total", &["state"],
        Some(("state", &["accepted", "handled", "total", "active", "reading", "writing", "waiting"]))),
    ("kong_upstream_target_health", &["upstream", "target", "address", "state"],
        Some(("state", &["healthy", "unhealthy", "dns_error"]))),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_family_and_label_the_official_dashboard_queries_is_served() {
    let up = EchoUpstream::start();
    let yaml = format!(
        r#"_format_version: "3.0"
upstreams:
- name: echo.upstream
  targets:
  - target: 127.0.0.1:{}
services:
- name: echo
  host: echo.upstream
  routes:
  - name: fast
    paths: [/fast]
    plugins:
    - name: proxy-cache
      config:
        strategy: memory
plugins:
- name: prometheus
  config:
    status_code_metrics: true
    latency_metrics: true
    bandwidth_metrics: true
    upstream_health_metrics: true
"#,
        up.port()
    );
    let gw = Gateway::builder(BIN).config_yaml(&yaml).start();
    // With a body, as the dashboard's panels were made from traffic with bodies.
    let resp = client()
        .post(gw.proxy_url("/fast"))
        .body("hello")
        .send()
        .await
        .expect("proxied");
    assert_eq!(resp.status(), 200);
    let text = scrape(&gw.status_url("/metrics")).await;
    let all = series(&text);
    for (family, labels, values) in DASHBOARD {
        let of_family: Vec<_> = all.iter().filter(|(n, _)| n == family).collect();
        assert!(!of_family.is_empty(), "no {family} in\n{text}");
        for (_, have) in &of_family {
            for label in *labels {
                assert!(
                    have.contains_key(*label),
                    "{family} without {label}: {have:?}"
                );
            }
        }
        if let Some((label, wanted)) = values {
            for value in *wanted {
                assert!(
                    of_family
                        .iter()
                        .any(|(_, l)| l.get(*label).map(String::as_str) == Some(value)),
                    "no {family}{{{label}=\"{value}\"}} in\n{text}"
                );
            }
        }
    }
    // The request is counted under the labels the dashboard's per-route panels filter on.
    let counted = all.iter().any(|(n, l)| {
        n == "kong_http_requests_total"
            && l.get("route").map(String::as_str) == Some("fast")
            && l.get("service").map(String::as_str) == Some("echo")
            && l.get("code").map(String::as_str) == Some("200")
    });
    assert!(counted, "{text}");
    // proxy-cache's store stands for Kong's `kong_db_cache`, bounded by `mem_cache_size` (128m).
    let bound = format!("kong_memory_lua_shared_dict_total_bytes{{kong_subsystem=http,node_id={},shared_dict=kong_db_cache}}",
        get_json(&gw.admin_url("/"), &[]).await.2["node_id"].as_str().unwrap_or_default());
    assert_eq!(
        parse(&text).get(&bound).copied(),
        Some(134_217_728.0),
        "{text}"
    );
    // `kong_node_info` names the Kong version `GET /` reports, as Kong's does.
    let version = get_json(&gw.admin_url("/"), &[]).await.2["version"].clone();
    let node = all
        .iter()
        .find(|(n, _)| n == "kong_node_info")
        .expect("kong_node_info");
    assert_eq!(
        node.1.get("version").map(String::as_str),
        version.as_str(),
        "{text}"
    );
}
