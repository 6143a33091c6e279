//! tcp-log, udp-log, syslog and loggly through the real binary, at real listeners on 127.0.0.1: a TCP
//! server (plain and TLS) reading lines, UDP sockets and a unix datagram socket standing in for
//! `/dev/log`. The bytes received must be Kong's framing around Kong's log record; receivers that are
//! down or never read must not slow or fail requests.

use serde_json::Value;
use sluice_testkit::{client, closed_port, EchoUpstream, Gateway, SilentServer};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::AsyncBufReadExt;
use tokio::net::{TcpListener, UdpSocket, UnixDatagram};
use tokio::sync::mpsc;

const BIN: &str = env!("CARGO_BIN_EXE_sluice");
const WAIT: Duration = Duration::from_secs(10);

/// `plugins` (YAML flow items) global; a service on `upstream` with `/logged` (carrying `route_plugin`
/// when given), `/keyed` (key-auth: 401 without a key) and `/broken` (a closed port: 502).
fn config(upstream: u16, plugins: &[String], route_plugin: Option<&str>) -> String {
    let route_plugins = route_plugin.map_or(String::new(), |p| format!("\n    plugins: [{p}]"));
    format!(
        r#"_format_version: "3.0"
plugins: [{plugins}]
services:
- name: svc
  url: http://127.0.0.1:{upstream}
  routes:
  - name: logged
    paths: [/logged]{route_plugins}
  - name: keyed
    paths: [/keyed]
    plugins: [{{name: key-auth}}]
- name: down
  url: http://127.0.0.1:{closed}
  retries: 0
  routes:
  - name: broken
    paths: [/broken]
consumers:
- username: alice
  keyauth_credentials: [{{key: alice-key}}]
"#,
        plugins = plugins.join(", "),
        closed = closed_port(),
    )
}

fn plugin(name: &str, config: &str) -> String {
    format!("{{name: {name}, config: {{{config}}}}}")
}

async fn get(gw: &Gateway, path: &str, headers: &[(&str, &str)]) -> u16 {
    let mut req = client().get(gw.proxy_url(path));
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    req.send().await.expect("proxied request").status().as_u16()
}

async fn next<T>(rx: &mut mpsc::UnboundedReceiver<T>, what: &str) -> T {
    tokio::time::timeout(WAIT, rx.recv())
        .await
        .unwrap_or_else(|_| panic!("no {what} within {WAIT:?}"))
        .expect("receiver alive")
}

/// One line a TCP log server read: the connection it came on (0, 1, ...), the SNI of that connection's
/// TLS handshake, and the text (without its `\n`).
struct Line {
    conn: usize,
    sni: Option<String>,
    text: String,
}

/// A TCP server that reads lines, optionally behind TLS with a self-signed certificate.
async fn line_server(tls: bool) -> (u16, mpsc::UnboundedReceiver<Line>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let acceptor = tls.then(|| {
        let cert = sluice_testkit::self_signed(&["logs.test"]);
        let config = rustls::ServerConfig::builder_with_provider(sluice_tls::provider())
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(
                sluice_tls::certificates(&cert.cert_pem).unwrap(),
                sluice_tls::private_key(&cert.key_pem).unwrap(),
            )
            .unwrap();
        tokio_rustls::TlsAcceptor::from(Arc::new(config))
    });
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        for conn in 0.. {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let (tx, acceptor) = (tx.clone(), acceptor.clone());
            tokio::spawn(async move {
                let (sni, reader): (_, Box<dyn tokio::io::AsyncRead + Unpin + Send>) =
                    match acceptor {
                        None => (None, Box::new(stream)),
                        Some(a) => {
                            let Ok(s) = a.accept(stream).await else {
                                return;
                            };
                            (s.get_ref().1.server_name().map(str::to_owned), Box::new(s))
                        }
                    };
                let mut lines = tokio::io::BufReader::new(reader).lines();
                while let Ok(Some(text)) = lines.next_line().await {
                    let sni = sni.clone();
                    if tx.send(Line { conn, sni, text }).is_err() {
                        return;
                    }
                }
            });
        }
    });
    (port, rx)
}

/// A UDP socket on 127.0.0.1 that reports every datagram.
async fn udp_server() -> (u16, mpsc::UnboundedReceiver<Vec<u8>>) {
    let socket = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let port = socket.local_addr().unwrap().port();
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        let mut buf = vec![0u8; 65536];
        while let Ok(n) = socket.recv(&mut buf).await {
            if tx.send(buf[..n].to_vec()).is_err() {
                return;
            }
        }
    });
    (port, rx)
}

fn json(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes).unwrap_or_else(|e| {
        panic!(
            "not one JSON record ({e}): {}",
            String::from_utf8_lossy(bytes)
        )
    })
}

/// The checks every record gets: Kong's record shape for a request to `uri` answered with `status`.
fn assert_record(r: &Value, uri: &str, status: u64) {
    assert_eq!(r["request"]["uri"], uri, "{r}");
    assert_eq!(r["request"]["method"], "GET");
    assert_eq!(r["response"]["status"], status, "{r}");
    assert_eq!(r["client_ip"], "127.0.0.1");
    assert!(r["started_at"].as_u64() > Some(1_600_000_000_000), "{r}");
    assert!(r["latencies"]["request"].is_u64(), "{r}");
    assert_eq!(r["workspace_name"], "default");
    assert_eq!(
        r["service"]["name"],
        if uri == "/broken" { "down" } else { "svc" }
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tcp_log_writes_one_json_line_per_request_on_a_kept_connection() {
    let up = EchoUpstream::start();
    let (port, mut lines) = line_server(false).await;
    let tcp = plugin("tcp-log", &format!("host: 127.0.0.1, port: {port}"));
    let gw = Gateway::builder(BIN)
        .config_yaml(&config(up.port(), &[tcp], None))
        .start();
    assert_eq!(get(&gw, "/logged/a?x=1", &[]).await, 200);
    assert_eq!(get(&gw, "/keyed", &[("apikey", "alice-key")]).await, 200);
    assert_eq!(get(&gw, "/keyed", &[]).await, 401);

    let mut got = Vec::new();
    for _ in 0..3 {
        got.push(next(&mut lines, "tcp-log line").await);
    }
    assert!(got.iter().all(|l| l.conn == 0), "one kept connection");
    assert!(got.iter().all(|l| l.sni.is_none()));
    let mut records: Vec<Value> = got.iter().map(|l| json(l.text.as_bytes())).collect();
    // In the order sent: a record is written when its response body is done, which may come after
    // the client (which reads only the head) sent its next request.
    records.sort_by_key(|r| {
        (
            r["request"]["uri"] != "/logged/a?x=1",
            r["response"]["status"] != 200,
        )
    });
    assert_record(&records[0], "/logged/a?x=1", 200);
    assert_eq!(records[0]["route"]["name"], "logged");
    assert_eq!(records[0]["upstream_uri"], "/a?x=1");
    assert_eq!(records[0]["request"]["querystring"]["x"], "1");
    assert_record(&records[1], "/keyed", 200);
    assert_eq!(records[1]["consumer"]["username"], "alice");
    assert_record(&records[2], "/keyed", 401);
    assert_eq!(records[2]["source"], "kong");
}

/// 400 requests from 8 clients at once: every record arrives, each exactly once, on the kept connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tcp_log_delivers_every_record_of_a_burst_once() {
    let up = EchoUpstream::start();
    let (port, mut lines) = line_server(false).await;
    let tcp = plugin("tcp-log", &format!("host: 127.0.0.1, port: {port}"));
    let gw = Arc::new(
        Gateway::builder(BIN)
            .config_yaml(&config(up.port(), &[tcp], None))
            .start(),
    );
    let clients: Vec<_> = (0..8)
        .map(|c| {
            let gw = gw.clone();
            tokio::spawn(async move {
                for i in 0..50 {
                    assert_eq!(get(&gw, &format!("/logged/{c}-{i}"), &[]).await, 200);
                }
            })
        })
        .collect();
    for client in clients {
        client.await.unwrap();
    }
    let mut uris = std::collections::BTreeSet::new();
    for _ in 0..400 {
        let line = next(&mut lines, "a line of the burst").await;
        assert_eq!(line.conn, 0, "one kept connection");
        let uri = json(line.text.as_bytes())["request"]["uri"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(uris.insert(uri.clone()), "{uri} twice");
    }
    assert!(
        tokio::time::timeout(Duration::from_millis(300), lines.recv())
            .await
            .is_err(),
        "nothing more than the 400 records"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tcp_log_over_tls_sends_tls_sni_only_when_set_and_accepts_any_certificate() {
    let up = EchoUpstream::start();
    let (port, mut lines) = line_server(true).await;
    let with_sni = plugin(
        "tcp-log",
        &format!("host: 127.0.0.1, port: {port}, tls: true, tls_sni: logs.test"),
    );
    let without = plugin(
        "tcp-log",
        &format!("host: 127.0.0.1, port: {port}, tls: true"),
    );
    let gw = Gateway::builder(BIN)
        .config_yaml(&config(up.port(), &[without], Some(&with_sni)))
        .start();
    assert_eq!(get(&gw, "/logged/sni", &[]).await, 200);
    let line = next(&mut lines, "a line over TLS").await;
    assert_eq!(line.sni.as_deref(), Some("logs.test"));
    assert_record(&json(line.text.as_bytes()), "/logged/sni", 200);

    assert_eq!(get(&gw, "/keyed", &[("apikey", "alice-key")]).await, 200);
    let line = next(&mut lines, "a line over TLS without SNI").await;
    assert_eq!(line.sni, None, "no tls_sni, no SNI (Kong passes nil)");
    assert_record(&json(line.text.as_bytes()), "/keyed", 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn udp_log_sends_one_datagram_per_record() {
    let up = EchoUpstream::start();
    let (port, mut datagrams) = udp_server().await;
    let udp = plugin("udp-log", &format!("host: localhost, port: {port}"));
    let gw = Gateway::builder(BIN)
        .config_yaml(&config(up.port(), &[udp], None))
        .start();
    assert_eq!(get(&gw, "/logged/u", &[]).await, 200);
    assert_eq!(get(&gw, "/broken", &[]).await, 502);
    let first = next(&mut datagrams, "a datagram").await;
    let second = next(&mut datagrams, "a second datagram").await;
    for d in [&first, &second] {
        assert_eq!(d.first(), Some(&b'{'));
        assert_eq!(d.last(), Some(&b'}'), "the record alone, no newline");
    }
    assert_record(&json(&first), "/logged/u", 200);
    assert_record(&json(&second), "/broken", 502);
}

/// Splits a syslog(3) message: priority, timestamp, the rest after the ident and pid.
fn syslog_parts(message: &str, pid: u32) -> (u32, &str, &str) {
    let (priority, rest) = message
        .strip_prefix('<')
        .and_then(|m| m.split_once('>'))
        .unwrap_or_else(|| panic!("no <PRI>: {message}"));
    let (stamp, rest) = rest.split_at(15);
    let json = rest
        .strip_prefix(&format!(" kong[{pid}]: "))
        .unwrap_or_else(|| panic!("not Kong's ident and our pid {pid}: {message}"));
    (priority.parse().unwrap(), stamp, json)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn syslog_sends_glibcs_message_with_facility_and_severity_by_status() {
    let up = EchoUpstream::start();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.sock");
    let socket = UnixDatagram::bind(&path).unwrap();
    // Global: only warnings and worse, at local3; the route keeps Kong's defaults (info, user).
    let global = plugin(
        "syslog",
        "log_level: warning, successful_severity: info, client_errors_severity: warning, \
         server_errors_severity: crit, facility: local3",
    );
    let route = plugin("syslog", "");
    let gw = Gateway::builder(BIN)
        .env("SLUICE_SYSLOG_SOCKET", path.to_str().unwrap())
        .config_yaml(&config(up.port(), &[global], Some(&route)))
        .start();
    let mut buf = vec![0u8; 65536];
    let mut receive = async || {
        let n = tokio::time::timeout(WAIT, socket.recv(&mut buf))
            .await
            .expect("a syslog message")
            .unwrap();
        String::from_utf8(buf[..n].to_vec()).unwrap()
    };
    let pid = gw.pid();
    // 200 under the global config: info is below warning, nothing is sent.
    assert_eq!(get(&gw, "/keyed", &[("apikey", "alice-key")]).await, 200);
    assert_eq!(get(&gw, "/keyed", &[]).await, 401);
    let message = receive().await;
    let (priority, stamp, rest) = syslog_parts(&message, pid);
    assert_eq!(priority, 19 * 8 + 4, "local3.warning: {message}");
    assert_record(&json(rest.as_bytes()), "/keyed", 401);
    let months = "JanFebMarAprMayJunJulAugSepOctNovDec";
    let bytes = stamp.as_bytes();
    assert!(
        months.contains(&stamp[..3])
            && bytes[3] == b' '
            && (bytes[4] == b' ' || bytes[4].is_ascii_digit())
            && bytes[5].is_ascii_digit()
            && &stamp[6..7] == " "
            && stamp[7..].bytes().filter(|b| *b == b':').count() == 2,
        "'Mmm dd hh:mm:ss': {stamp:?}"
    );

    assert_eq!(get(&gw, "/broken", &[]).await, 502);
    let message = receive().await;
    let (priority, _, rest) = syslog_parts(&message, pid);
    assert_eq!(priority, 19 * 8 + 2, "local3.crit: {message}");
    assert_record(&json(rest.as_bytes()), "/broken", 502);

    assert_eq!(get(&gw, "/logged/r", &[]).await, 200);
    let message = receive().await;
    let (priority, _, rest) = syslog_parts(&message, pid);
    assert_eq!(priority, 8 + 6, "the route's user.info: {message}");
    assert_record(&json(rest.as_bytes()), "/logged/r", 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn loggly_sends_kongs_syslog_frame_with_the_token_and_tags() {
    let up = EchoUpstream::start();
    let (port, mut datagrams) = udp_server().await;
    let loggly = plugin(
        "loggly",
        &format!(
            "host: 127.0.0.1, port: {port}, key: TOKEN-1, tags: [kong, test], \
             client_errors_severity: err, log_level: debug"
        ),
    );
    let gw = Gateway::builder(BIN)
        .config_yaml(&config(up.port(), &[loggly], None))
        .start();
    let hostname = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    assert_eq!(get(&gw, "/logged/l", &[]).await, 200);
    assert_eq!(get(&gw, "/keyed", &[]).await, 401);
    // Each request's datagram is sent from its own log phase, so they may arrive in either order.
    let mut texts = Vec::new();
    for _ in 0..2 {
        let datagram = next(&mut datagrams, "a loggly datagram").await;
        texts.push(String::from_utf8(datagram).unwrap());
    }
    texts.sort_by_key(|t| !t.contains("\"uri\":\"/logged/l\""));
    for ((priority, uri, status), text) in [("<14>1", "/logged/l", 200), ("<11>1", "/keyed", 401)]
        .into_iter()
        .zip(texts)
    {
        let parts: Vec<&str> = text.splitn(10, ' ').collect();
        assert_eq!(parts[0], priority, "user facility + severity: {text}");
        let stamp = parts[1].as_bytes();
        assert!(
            stamp.len() == 20 && stamp[10] == b'T' && stamp[19] == b'Z',
            "UTC to the second: {text}"
        );
        assert_eq!(
            parts[2..9],
            [
                hostname.trim(),
                "kong",
                "-",
                "-",
                "[TOKEN-1@41058",
                "tag=\"kong\"",
                "tag=\"test\"]"
            ],
            "{text}"
        );
        assert_record(&json(parts[9].as_bytes()), uri, status);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn receivers_that_are_down_or_never_read_do_not_slow_requests() {
    let up = EchoUpstream::start();
    let silent = SilentServer::start();
    let dir = tempfile::tempdir().unwrap();
    let dead = closed_port();
    let plugins = [
        plugin("tcp-log", &format!("host: 127.0.0.1, port: {dead}")),
        plugin("udp-log", &format!("host: 127.0.0.1, port: {dead}")),
        plugin("loggly", &format!("host: 127.0.0.1, port: {dead}, key: k")),
        plugin("syslog", ""),
    ];
    // The route's tcp-log server accepts and never reads: writes pile up in its socket buffers.
    let never_reads = plugin(
        "tcp-log",
        &format!("host: 127.0.0.1, port: {}, timeout: 200", silent.port()),
    );
    let gw = Gateway::builder(BIN)
        .env(
            "SLUICE_SYSLOG_SOCKET",
            dir.path().join("nobody.sock").to_str().unwrap(),
        )
        .config_yaml(&config(up.port(), &plugins, Some(&never_reads)))
        .start();
    let started = Instant::now();
    for i in 0..40 {
        let one = Instant::now();
        let path = if i % 2 == 0 { "/logged/x" } else { "/keyed" };
        let headers: &[(&str, &str)] = &[("apikey", "alice-key")];
        assert_eq!(get(&gw, path, headers).await, 200, "request {i}");
        assert!(
            one.elapsed() < Duration::from_secs(1),
            "request {i} took {:?}",
            one.elapsed()
        );
    }
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    // The deliveries were tried and failed (on the log thread, not in the requests).
    let deadline = Instant::now() + WAIT;
    let wanted = ["tcp-log", "syslog"].map(|p| format!("{p} gave up delivering"));
    while !wanted.iter().all(|w| gw.log().contains(w.as_str())) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let log = gw.log();
    for w in &wanted {
        assert!(log.contains(w.as_str()), "no '{w}' in:\n{log}");
    }
    assert!(
        log.contains(&format!("failed to connect to 127.0.0.1:{dead}")),
        "{log}"
    );
}
