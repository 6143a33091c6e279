//! L4 streams (`stream_listen`) through the real binary, with raw TCP and UDP echo upstreams and TLS
//! clients with SNI: every stream route rule (sources by IP, CIDR and port, destinations by IP and port,
//! snis exact and wildcard) and Kong's priority between routes that all match; TLS terminated with the
//! config's certificate; tls_passthrough by SNI to a TLS upstream that shows its own certificate; TLS
//! again to a `tls` service; UDP datagrams both ways; ip-restriction closing a refused client (also
//! when the instance names no `protocols`: Kong's default for it has the stream ones); the
//! service's read timeout closing an idle session; a reload that keeps an open session; and HTTP
//! requests that never reach a stream route.

use serde_json::{json, Value};
use sluice_testkit::{
    client, free_tcp_port, free_udp_port, insecure_client, self_signed, Gateway, TcpLineEcho,
    TlsEchoUpstream, UdpEcho,
};
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::net::{TcpSocket, TcpStream};
use tokio_rustls::rustls::pki_types::ServerName;

const BIN: &str = env!("CARGO_BIN_EXE_sluice");
const WAIT: Duration = Duration::from_secs(5);

fn gateway(config: &Value, stream_listen: &str) -> Gateway {
    Gateway::builder(BIN)
        .workers(2)
        .env("SLUICE_STREAM_LISTEN", stream_listen)
        .config_yaml(&config.to_string())
        .start()
}

/// A `tcp` service on a line echo.
fn tcp_service(name: &str, port: u16, routes: Value) -> Value {
    json!({"name": name, "protocol": "tcp", "host": "127.0.0.1", "port": port, "routes": routes})
}

/// A TCP connection from `from` (an IP, or IP:port) to 127.0.0.x:`port`.
async fn connect(from: &str, to: SocketAddr) -> TcpStream {
    let from: SocketAddr = from
        .parse()
        .or_else(|_| format!("{from}:0").parse())
        .unwrap();
    let socket = TcpSocket::new_v4().unwrap();
    socket.set_reuseaddr(true).unwrap();
    socket.bind(from).unwrap();
    socket.connect(to).await.unwrap()
}

/// A free port that the kernel never hands out as an ephemeral source port, for the route that
/// matches on a source port: a `free_tcp_port()` there could be given again to another test
/// connection's `bind(ip:0)`, which would then match that route too (a CI run saw exactly that).
fn port_below_the_ephemeral_range() -> u16 {
    let range = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range").unwrap();
    let low: u16 = range.split_whitespace().next().unwrap().parse().unwrap();
    (low.saturating_sub(2000)..low)
        .rev()
        .find(|p| std::net::TcpListener::bind(("127.0.0.1", *p)).is_ok())
        .expect("a free port below the ephemeral range")
}

/// Sends one line and reads the answer line; None when the gateway closed the connection instead.
async fn exchange<S: AsyncRead + AsyncWrite + Unpin>(stream: &mut S, line: &str) -> Option<String> {
    stream
        .write_all(format!("{line}\n").as_bytes())
        .await
        .ok()?;
    let mut reader = BufReader::new(stream);
    let mut answer = String::new();
    match tokio::time::timeout(WAIT, reader.read_line(&mut answer)).await {
        Ok(Ok(n)) if n > 0 => Some(answer.trim_end().to_string()),
        Ok(_) => None,
        Err(_) => panic!("no answer and no close within {WAIT:?}"),
    }
}

/// Which upstream answered a connection from `from` to `to` (None: the gateway closed it).
async fn routed(from: &str, to: SocketAddr) -> Option<String> {
    let mut s = connect(from, to).await;
    exchange(&mut s, "hi")
        .await
        .map(|a| a.trim_end_matches(" hi").to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tcp_routes_match_sources_and_destinations_with_kongs_priority() {
    let names = [
        "dst-port", "dst-ip", "src-cidr", "src-ip", "src-port", "both",
    ];
    let echoes: Vec<TcpLineEcho> = names.iter().map(|n| TcpLineEcho::start(n)).collect();
    let (a, b, c) = (free_tcp_port(), free_tcp_port(), free_tcp_port());
    let src_port = port_below_the_ephemeral_range();
    let route = |field: &str, v: Value| json!([{"protocols": ["tcp"], field: v}]);
    let config = json!({
        "_format_version": "3.0",
        "services": [
            tcp_service("dst-port", echoes[0].port(), route("destinations", json!([{"port": a}]))),
            tcp_service("dst-ip", echoes[1].port(), route("destinations", json!([{"ip": "127.0.0.5"}]))),
            tcp_service("src-cidr", echoes[2].port(), route("sources", json!([{"ip": "127.0.0.2/32"}]))),
            tcp_service("src-ip", echoes[3].port(), route("sources", json!([{"ip": "127.0.0.3"}]))),
            tcp_service("src-port", echoes[4].port(), route("sources", json!([{"port": src_port}]))),
            tcp_service("both", echoes[5].port(), json!([{"protocols": ["tcp"],
                "sources": [{"ip": "127.0.0.4"}], "destinations": [{"port": b}]}])),
        ],
    });
    let gw = gateway(
        &config,
        &format!("127.0.0.1:{a}, 127.0.0.1:{b}, 127.0.0.5:{c}"),
    );
    let (to_a, to_b, to_c) = (
        SocketAddr::from(([127, 0, 0, 1], a)),
        SocketAddr::from(([127, 0, 0, 1], b)),
        SocketAddr::from(([127, 0, 0, 5], c)),
    );
    let table = [
        // Only the destination port matches.
        ("127.0.0.1", to_a, Some("dst-port")),
        // The destination IP.
        ("127.0.0.1", to_c, Some("dst-ip")),
        // A CIDR source (weight 1, shifted above destinations) outranks a destination port (4).
        ("127.0.0.2", to_a, Some("src-cidr")),
        // An exact source IP.
        ("127.0.0.3", to_a, Some("src-ip")),
        // Sources and destinations together outrank everything else.
        ("127.0.0.4", to_b, Some("both")),
        // ... but need both: from the same source to another port, only dst-port is left.
        ("127.0.0.4", to_a, Some("dst-port")),
        // A source port.
        (&*format!("127.0.0.1:{src_port}"), to_b, Some("src-port")),
        // Nothing matches: the connection is closed.
        ("127.0.0.1", to_b, None),
    ];
    for (from, to, want) in table {
        let got = routed(from, to).await;
        assert_eq!(got.as_deref(), want, "from {from} to {to}\n{}", gw.log());
    }
    // The upstream saw the gateway's connection, not the client's address.
    assert!(echoes[3]
        .peers()
        .iter()
        .all(|p| p.ip().to_string() == "127.0.0.1"));
    // The HTTP proxy never sees a stream route: every request is Kong's 404.
    let resp = client()
        .get(gw.proxy_url("/anything"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 404);
}

/// A TLS client to 127.0.0.1:`port` with `sni`, accepting any certificate.
async fn tls(port: u16, sni: &str) -> std::io::Result<tokio_rustls::client::TlsStream<TcpStream>> {
    let tcp = TcpStream::connect(("127.0.0.1", port)).await?;
    let name = ServerName::try_from(sni.to_string()).unwrap();
    tokio_rustls::TlsConnector::from(insecure_client(&[], false))
        .connect(name, tcp)
        .await
}

fn leaf<S>(s: &tokio_rustls::client::TlsStream<S>) -> Vec<u8> {
    s.get_ref().1.peer_certificates().unwrap()[0].to_vec()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_is_terminated_or_passed_through_by_sni() {
    let term = TcpLineEcho::start("term");
    let wild = TcpLineEcho::start("wild");
    let upstream_cert = self_signed(&["pass.test"]);
    let tls_echo = TlsEchoUpstream::start(&upstream_cert, None);
    let ours = self_signed(&["term.test", "*.wild.test", "reenc.test"]);
    let port = free_tcp_port();
    let config = json!({
        "_format_version": "3.0",
        "certificates": [{"cert": ours.cert_pem, "key": ours.key_pem,
            "snis": [{"name": "term.test"}, {"name": "*.wild.test"}, {"name": "reenc.test"}]}],
        "services": [
            tcp_service("term", term.port(), json!([{"protocols": ["tls"], "snis": ["term.test"]}])),
            tcp_service("wild", wild.port(), json!([{"protocols": ["tls"], "snis": ["*.wild.test"]}])),
            tcp_service("pass", tls_echo.port(),
                json!([{"protocols": ["tls_passthrough"], "snis": ["pass.test"]}])),
            {"name": "reenc", "protocol": "tls", "host": "127.0.0.1", "port": tls_echo.port(),
             "routes": [{"protocols": ["tls"], "snis": ["reenc.test"], "preserve_host": true}]},
        ],
    });
    let gw = gateway(&config, &format!("127.0.0.1:{port} ssl"));

    // Terminated here, with the config's certificate for the name.
    let mut s = tls(port, "term.test").await.unwrap();
    assert_eq!(leaf(&s), ours.der);
    assert_eq!(
        exchange(&mut s, "hello").await.as_deref(),
        Some("term hello"),
        "{}",
        gw.log()
    );
    let mut s = tls(port, "a.b.wild.test").await.unwrap();
    assert_eq!(exchange(&mut s, "x").await.as_deref(), Some("wild x"));

    // Passed through: the client's TLS session is with the upstream itself (its certificate, the SNI).
    let mut s = tls(port, "pass.test").await.unwrap();
    assert_eq!(leaf(&s), upstream_cert.der);
    let body = http_get(&mut s, "pass.test").await;
    assert_eq!(body["tls"]["sni"], "pass.test", "{body}");

    // A `tls` service: terminated here, TLS again to the upstream, with the client's name (preserve_host).
    let mut s = tls(port, "reenc.test").await.unwrap();
    assert_eq!(leaf(&s), ours.der);
    let body = http_get(&mut s, "reenc.test").await;
    assert_eq!(body["tls"]["sni"], "reenc.test", "{body}");

    // No route for the name: the connection is closed before any handshake answer.
    assert!(tls(port, "nowhere.test").await.is_err());
}

/// One HTTP/1.1 GET over `s`; the echo's JSON body.
async fn http_get<S: AsyncRead + AsyncWrite + Unpin>(s: &mut S, host: &str) -> Value {
    let req = format!("GET /x HTTP/1.1\r\nhost: {host}\r\nconnection: close\r\n\r\n");
    s.write_all(req.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    let _ = tokio::time::timeout(WAIT, s.read_to_end(&mut raw)).await;
    let text = String::from_utf8_lossy(&raw);
    let body = text.split_once("\r\n\r\n").map(|(_, b)| b).unwrap_or("");
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {text}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn udp_datagrams_go_both_ways_per_client() {
    let echo = UdpEcho::start("udp");
    let port = free_udp_port();
    let config = json!({
        "_format_version": "3.0",
        "services": [{"name": "u", "protocol": "udp", "host": "127.0.0.1", "port": echo.port(),
            "routes": [{"protocols": ["udp"], "sources": [{"ip": "127.0.0.0/8"}]}]}],
    });
    let gw = gateway(&config, &format!("127.0.0.1:{port} udp"));
    let clients = [
        tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap(),
        tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap(),
    ];
    for round in 0..3 {
        for (i, c) in clients.iter().enumerate() {
            let msg = format!("client{i}-{round}");
            c.send_to(msg.as_bytes(), ("127.0.0.1", port))
                .await
                .unwrap();
            let mut buf = [0u8; 256];
            let n = tokio::time::timeout(WAIT, c.recv(&mut buf))
                .await
                .unwrap_or_else(|_| panic!("no answer to {msg}\n{}", gw.log()))
                .unwrap();
            assert_eq!(
                std::str::from_utf8(&buf[..n]).unwrap(),
                format!("udp {msg}")
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ip_restriction_closes_refused_clients_in_preread() {
    let echo = TcpLineEcho::start("echo");
    let port = free_tcp_port();
    let config = json!({
        "_format_version": "3.0",
        "services": [tcp_service("s", echo.port(), json!([{
            "name": "r", "protocols": ["tcp"], "destinations": [{"port": port}],
            "plugins": [{"name": "ip-restriction", "protocols": ["tcp"],
                "config": {"deny": ["127.0.0.1", "127.0.0.6/31"]}}],
        }]))],
    });
    let gw = gateway(&config, &format!("127.0.0.1:{port}"));
    let to = SocketAddr::from(([127, 0, 0, 1], port));
    assert_eq!(routed("127.0.0.1", to).await, None, "{}", gw.log());
    assert_eq!(routed("127.0.0.7", to).await, None);
    assert_eq!(routed("127.0.0.8", to).await.as_deref(), Some("echo"));
    // The refused clients never reached the upstream.
    assert_eq!(echo.peers().len(), 1);
}

/// Kong's ip-restriction defaults its `protocols` to `http, https, tcp, tls, grpc, grpcs`: an instance
/// that names none runs on a `tcp` route too (other plugins' default has HTTP protocols only).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ip_restriction_without_protocols_runs_on_stream_routes() {
    let echo = TcpLineEcho::start("echo");
    let port = free_tcp_port();
    let config = json!({
        "_format_version": "3.0",
        "services": [tcp_service("s", echo.port(), json!([{
            "name": "r", "protocols": ["tcp"], "destinations": [{"port": port}],
            "plugins": [{"name": "ip-restriction", "config": {"deny": ["127.0.0.1"]}}],
        }]))],
    });
    let gw = gateway(&config, &format!("127.0.0.1:{port}"));
    let to = SocketAddr::from(([127, 0, 0, 1], port));
    assert_eq!(routed("127.0.0.1", to).await, None, "{}", gw.log());
    assert_eq!(routed("127.0.0.8", to).await.as_deref(), Some("echo"));
    assert_eq!(echo.peers().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_sessions_close_and_a_reload_keeps_open_ones() {
    let echo = TcpLineEcho::start("echo");
    let (idle_port, keep_port) = (free_tcp_port(), free_tcp_port());
    let config = |with_keep: bool| {
        let mut services = vec![
            json!({"name": "idle", "protocol": "tcp", "host": "127.0.0.1",
            "port": echo.port(), "read_timeout": 500,
            "routes": [{"protocols": ["tcp"], "destinations": [{"port": idle_port}]}]}),
        ];
        if with_keep {
            services.push(tcp_service(
                "keep",
                echo.port(),
                json!([{"protocols": ["tcp"], "destinations": [{"port": keep_port}]}]),
            ));
        }
        json!({"_format_version": "3.0", "services": services})
    };
    let gw = gateway(
        &config(true),
        &format!("127.0.0.1:{idle_port}, 127.0.0.1:{keep_port}"),
    );

    // Idle for longer than the read timeout: the gateway closes the session.
    let mut s = connect("127.0.0.1", SocketAddr::from(([127, 0, 0, 1], idle_port))).await;
    assert_eq!(
        exchange(&mut s, "a").await.as_deref(),
        Some("echo a"),
        "{}",
        gw.log()
    );
    let started = std::time::Instant::now();
    let mut rest = Vec::new();
    let n = tokio::time::timeout(WAIT, s.read_to_end(&mut rest)).await;
    assert!(matches!(n, Ok(Ok(0))), "{n:?}");
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(400) && waited < Duration::from_secs(3),
        "{waited:?}"
    );

    // A session open across a reload that removes its route carries on; a new one finds no route.
    let to_keep = SocketAddr::from(([127, 0, 0, 1], keep_port));
    let mut open = connect("127.0.0.1", to_keep).await;
    assert_eq!(
        exchange(&mut open, "before").await.as_deref(),
        Some("echo before")
    );
    let resp = client()
        .post(gw.admin_url("/config"))
        .header("content-type", "application/json")
        .body(config(false).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 201, "{}", resp.text().await.unwrap());
    assert_eq!(
        exchange(&mut open, "after").await.as_deref(),
        Some("echo after")
    );
    assert_eq!(routed("127.0.0.1", to_keep).await, None);
}
