//! statsd and datadog through the real binary: the exact lines Kong sends for a request through a named
//! service and route with a key-auth consumer, received on real UDP (and TCP) sockets on 127.0.0.1;
//! sample rates, datagram packing, tag styles, allow_status_codes, the unmatched scope; and a receiver that
//! is gone does not slow requests down.

use sluice_testkit::{client, closed_port, EchoUpstream, Gateway};
use std::io::{BufRead, BufReader};
use std::net::{TcpListener, UdpSocket};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_sluice");

/// A StatsD server: a UDP socket on an ephemeral port that collects datagrams.
struct Receiver(UdpSocket);

impl Receiver {
    fn start() -> Receiver {
        let socket = UdpSocket::bind("127.0.0.1:0").expect("bind udp");
        Receiver(socket)
    }

    fn port(&self) -> u16 {
        self.0.local_addr().unwrap().port()
    }

    /// Datagrams until `n` arrived (or 10 s passed), then any that follow within 300 ms.
    fn datagrams(&self, n: usize) -> Vec<String> {
        let mut got = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut buf = [0u8; 65536];
        loop {
            let wait = if got.len() >= n {
                Duration::from_millis(300)
            } else {
                deadline.saturating_duration_since(Instant::now())
            };
            if wait.is_zero() {
                return got;
            }
            self.0.set_read_timeout(Some(wait)).unwrap();
            match self.0.recv(&mut buf) {
                Ok(len) => got.push(String::from_utf8_lossy(&buf[..len]).into_owned()),
                Err(_) => return got,
            }
        }
    }
}

/// `billing.v1` (a dot, which Kong turns into `_` in metric names) with route `invoices` carrying key-auth
/// and `plugin`, route `open` carrying only `plugin`, and consumer bob (custom_id robert).
fn config(upstream: u16, plugin: &str) -> String {
    format!(
        r#"_format_version: "3.0"
services:
- name: billing.v1
  url: http://127.0.0.1:{upstream}
  routes:
  - name: invoices
    paths: [/invoices]
    plugins:
    - name: key-auth
    - {plugin}
  - name: open
    paths: [/open]
    plugins:
    - {plugin}
consumers:
- username: bob
  custom_id: robert
  keyauth_credentials: [{{key: bob-key}}]
"#
    )
}

async fn get(gw: &Gateway, path: &str, key: Option<&str>) -> u16 {
    let mut req = client().get(gw.proxy_url(path));
    if let Some(key) = key {
        req = req.header("apikey", key);
    }
    let resp = req.send().await.expect("proxied request");
    let status = resp.status().as_u16();
    resp.bytes().await.expect("body");
    status
}

/// A line with the value of a size or latency (which vary) replaced by `N`, after checking it is a number.
fn shape(line: &str) -> String {
    let (name, rest) = line.split_once(':').expect("name:value");
    let (value, kind) = rest.split_once('|').expect("value|type");
    if !(name.ends_with("latency") || name.ends_with(".size")) {
        return line.to_string();
    }
    assert!(value.parse::<u64>().is_ok(), "{line}");
    format!("{name}:N|{kind}")
}

/// The id of route `invoices`, from the Admin API.
async fn route_id(gw: &Gateway) -> String {
    let route = sluice_testkit::get_json(&gw.admin_url("/routes/invoices"), &[])
        .await
        .2;
    route["id"].as_str().expect("route id").to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn statsd_sends_kongs_default_metrics_for_a_consumer() {
    let up = EchoUpstream::start();
    let rx = Receiver::start();
    let plugin = format!(
        "{{name: statsd, config: {{host: 127.0.0.1, port: {}}}}}",
        rx.port()
    );
    let gw = Gateway::builder(BIN)
        .config_yaml(&config(up.port(), &plugin))
        .start();
    assert_eq!(get(&gw, "/invoices", Some("bob-key")).await, 200);
    let route = route_id(&gw).await;
    let got: Vec<String> = rx.datagrams(12).iter().map(|l| shape(l)).collect();
    let ws = "0dc6f45b-8f8d-40d2-a504-473544ee190b";
    let s = "kong.service.billing_v1";
    let expected = [
        format!("{s}.request.count:1|c"),
        format!("{s}.latency:N|ms"),
        format!("{s}.request.size:N|c"),
        format!("{s}.status.200:1|c"),
        format!("{s}.response.size:N|c"),
        format!("{s}.user.uniques:robert|s"),
        format!("{s}.user.robert.request.count:1|c"),
        format!("{s}.upstream_latency:N|ms"),
        format!("{s}.kong_latency:N|ms"),
        format!("{s}.user.robert.status.200:1|c"),
        format!("{s}.workspace.{ws}.status.200:1|c"),
        format!("kong.route.{route}.user.robert.status.200:1|c"),
    ];
    assert_eq!(got, expected, "one datagram per line, in Kong's order");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sample_rates_packing_tags_and_status_filter() {
    let up = EchoUpstream::start();
    let rx = Receiver::start();
    let plugin = format!(
        "{{name: statsd, config: {{host: 127.0.0.1, port: {}, prefix: edge, udp_packet_size: 500, \
         allow_status_codes: ['200-299'], consumer_identifier_default: username, metrics: [\
         {{name: request_count, stat_type: counter, sample_rate: 0.25}}, \
         {{name: request_per_user, stat_type: counter, sample_rate: 0.5}}, \
         {{name: status_count, stat_type: counter, sample_rate: 1}}]}}}}",
        rx.port()
    );
    let gw = Gateway::builder(BIN)
        .config_yaml(&config(up.port(), &plugin))
        .start();
    assert_eq!(
        get(&gw, "/invoices", None).await,
        401,
        "not measured: outside 200-299"
    );
    assert_eq!(get(&gw, "/invoices", Some("bob-key")).await, 200);
    assert_eq!(
        rx.datagrams(1),
        ["edge.service.billing_v1.request.count:1|c|@0.25\n\
          edge.service.billing_v1.user.bob.request.count:1|c|@0.5\n\
          edge.service.billing_v1.status.200:1|c"],
        "one datagram of three lines; rates sent, not applied"
    );

    let tagged = format!(
        "{{name: statsd, config: {{host: 127.0.0.1, port: {}, tag_style: dogstatsd, metrics: [\
         {{name: request_count, stat_type: counter, sample_rate: 1}}, {{name: status_count, stat_type: counter, sample_rate: 1}}]}}}}",
        rx.port()
    );
    let gw = Gateway::builder(BIN)
        .config_yaml(&config(up.port(), &tagged))
        .start();
    assert_eq!(get(&gw, "/invoices", Some("bob-key")).await, 200);
    let got = rx.datagrams(1);
    let ws = "0dc6f45b-8f8d-40d2-a504-473544ee190b";
    let prefix = format!(
        "kong.request.count:1|c|#service:billing.v1,route:invoices,workspace:{ws},consumer:robert,node:"
    );
    assert_eq!(got.len(), 1, "status_count is not sent with tags: {got:?}");
    assert!(
        got[0].starts_with(&prefix) && got[0].ends_with(",status:200"),
        "{got:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_global_statsd_measures_unmatched_requests() {
    let rx = Receiver::start();
    let yaml = format!(
        "_format_version: \"3.0\"\nplugins:\n- {{name: statsd, config: {{host: 127.0.0.1, port: {}, metrics: [\
         {{name: status_count, stat_type: counter, sample_rate: 1}}, {{name: upstream_latency, stat_type: timer}}, \
         {{name: unique_users, stat_type: set}}]}}}}\n",
        rx.port()
    );
    let gw = Gateway::builder(BIN).config_yaml(&yaml).start();
    assert_eq!(get(&gw, "/nowhere", None).await, 404);
    assert_eq!(
        rx.datagrams(1),
        ["kong.global.unmatched.status.404:1|c"],
        "no upstream latency, no user without a consumer"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn use_tcp_sends_newline_terminated_lines() {
    let up = EchoUpstream::start();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let plugin = format!(
        "{{name: statsd, config: {{host: 127.0.0.1, port: {port}, use_tcp: true, metrics: [\
         {{name: request_count, stat_type: counter, sample_rate: 1}}, {{name: status_count, stat_type: counter, sample_rate: 1}}]}}}}"
    );
    let gw = Gateway::builder(BIN)
        .config_yaml(&config(up.port(), &plugin))
        .start();
    for _ in 0..2 {
        assert_eq!(get(&gw, "/open", None).await, 200);
    }
    let (conn, _) = listener.accept().expect("the plugin connects");
    conn.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut reader = BufReader::new(conn);
    let mut lines = Vec::new();
    for _ in 0..4 {
        let mut line = String::new();
        reader.read_line(&mut line).expect("a line");
        lines.push(line);
    }
    let one = [
        "kong.service.billing_v1.request.count:1|c\n",
        "kong.service.billing_v1.status.200:1|c\n",
    ];
    assert_eq!(
        lines,
        [one, one].concat(),
        "both batches on one kept connection"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn datadog_sends_dogstatsd_lines() {
    let up = EchoUpstream::start();
    let rx = Receiver::start();
    let plugin = format!(
        "{{name: datadog, config: {{host: 127.0.0.1, port: {}}}}}",
        rx.port()
    );
    let gw = Gateway::builder(BIN)
        .config_yaml(&config(up.port(), &plugin))
        .start();
    assert_eq!(get(&gw, "/invoices", Some("bob-key")).await, 200);
    let got: Vec<String> = rx.datagrams(6).iter().map(|l| shape(l)).collect();
    let tags = "|#name:billing_v1,status:200,consumer:robert,app:kong";
    assert_eq!(
        got,
        [
            format!("kong.request.count:1|c{tags}"),
            format!("kong.latency:N|ms{tags}"),
            format!("kong.request.size:N|ms{tags}"),
            format!("kong.response.size:N|ms{tags}"),
            format!("kong.upstream_latency:N|ms{tags}"),
            format!("kong.kong_latency:N|ms{tags}"),
        ]
    );
}

/// Metrics to a UDP port nobody listens on, a UDP server that never reads, and a TCP port that refuses:
/// every request is answered at once, and the gateway keeps serving.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_receiver_does_not_block_requests() {
    let up = EchoUpstream::start();
    let deaf = Receiver::start();
    let dead = closed_port();
    let plugins = [
        format!("{{name: statsd, config: {{host: 127.0.0.1, port: {dead}}}}}"),
        format!("{{name: statsd, config: {{host: 127.0.0.1, port: {dead}, use_tcp: true}}}}"),
        format!(
            "{{name: datadog, config: {{host: 127.0.0.1, port: {}}}}}",
            deaf.port()
        ),
    ];
    for plugin in plugins {
        let gw = Gateway::builder(BIN)
            .config_yaml(&config(up.port(), &plugin))
            .start();
        let started = Instant::now();
        for _ in 0..300 {
            assert_eq!(get(&gw, "/open", None).await, 200, "{plugin}");
        }
        let took = started.elapsed();
        assert!(
            took < Duration::from_secs(10),
            "{plugin}: 300 requests took {took:?}"
        );
        assert_eq!(get(&gw, "/invoices", Some("bob-key")).await, 200);
    }
}
