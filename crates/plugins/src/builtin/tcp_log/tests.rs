//! tcp-log's schema, framing, and the kept connection against a real TCP listener.

use super::sink::{lines, TcpSink};
use super::*;
use crate::logging::queue::Sink;
use crate::Registry;
use bytes::Bytes;
use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::time::Duration;

fn load(plugin_config: &str) -> Result<sluice_model::Config, String> {
    crate::logging::address::parse_plugin("tcp-log", plugin_config)
}

#[test]
fn fills_kongs_defaults() {
    let config = load("{host: logs.test, port: 5000}").unwrap();
    let c = &config.plugins[0].config;
    assert_eq!(c["timeout"].as_f64(), Some(10000.0));
    assert_eq!(c["keepalive"].as_f64(), Some(60000.0));
    assert_eq!(c["tls"], false);
    assert!(c.get("tls_sni").is_none_or(|v| v.is_null()));
    let typed: Config = typed_config(&config.plugins[0]).unwrap();
    assert_eq!((typed.host.as_str(), typed.port), ("logs.test", 5000));
}

#[test]
fn refuses_what_kong_refuses() {
    for (bad, expected) in [
        ("{port: 5000}", "config.host: required field missing"),
        ("{host: a.test}", "config.port: required field missing"),
        ("{host: 'a.test:80', port: 1}", "must not have a port"),
        ("{host: '[::1]:80', port: 1}", "must not have a port"),
        ("{host: 'a b', port: 1}", "invalid value: a b"),
        ("{host: '1.2.3.999', port: 1}", "invalid value: 1.2.3.999"),
        ("{host: a.test, port: 65536}", "port"),
        ("{host: a.test, port: 1, tls: 'yes'}", "tls"),
        (
            "{host: a.test, port: 1, custom_fields_by_lua: {a: 'return 1'}}",
            "does not run Lua",
        ),
        ("{host: a.test, port: 1, queue: {}}", "queue"),
    ] {
        let err = load(bad).expect_err(bad);
        assert!(err.contains(expected), "{bad}: {err}");
    }
    for good in [
        "{host: 127.0.0.1, port: 0}",
        "{host: '::1', port: 65535}",
        "{host: '[2001:db8::1]', port: 9}",
        "{host: logs.example.com., port: 9, tls: true, tls_sni: logs.example.com}",
        "{host: a_b-c.test, port: 9, custom_fields_by_lua: {}}",
    ] {
        load(good).unwrap_or_else(|e| panic!("{good}: {e}"));
    }
}

#[test]
fn each_record_is_a_json_line_like_kongs_cjson_encode_plus_newline() {
    let batch = [Bytes::from_static(b"{\"a\":1}"), Bytes::from_static(b"{}")];
    assert_eq!(lines(&batch), b"{\"a\":1}\n{}\n");
}

/// Accepts connections one after another and reports each line with the connection it came on.
fn listener() -> (u16, std::sync::mpsc::Receiver<(usize, String)>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for (n, conn) in listener.incoming().enumerate() {
            let Ok(conn) = conn else { return };
            let tx = tx.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(conn).lines() {
                    let Ok(line) = line else { return };
                    // A line "close" makes the server drop the connection.
                    if line.contains("close") || tx.send((n, line)).is_err() {
                        return;
                    }
                }
            });
        }
    });
    (port, rx)
}

fn recv(rx: &std::sync::mpsc::Receiver<(usize, String)>) -> (usize, String) {
    rx.recv_timeout(Duration::from_secs(10))
        .expect("a line at the listener")
}

/// The runtime a test's deliveries run on (a kept connection belongs to it).
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn deliver(
    rt: &tokio::runtime::Runtime,
    sink: &TcpSink,
    records: &[&'static str],
) -> Result<(), String> {
    let batch: Vec<Bytes> = records
        .iter()
        .map(|r| Bytes::from_static(r.as_bytes()))
        .collect();
    rt.block_on(sink.deliver(&batch))
}

#[test]
fn keeps_the_connection_and_replaces_one_the_server_closed() {
    let (port, rx) = listener();
    let rt = runtime();
    let sink = TcpSink::new("127.0.0.1".into(), port, Duration::from_secs(5), None, None).unwrap();
    deliver(&rt, &sink, &["{\"n\":1}", "{\"n\":2}"]).unwrap();
    deliver(&rt, &sink, &["{\"n\":3}"]).unwrap();
    assert_eq!(recv(&rx), (0, "{\"n\":1}".to_string()));
    assert_eq!(recv(&rx), (0, "{\"n\":2}".to_string()));
    assert_eq!(recv(&rx), (0, "{\"n\":3}".to_string()), "same connection");

    deliver(&rt, &sink, &["{\"close\":true}"]).unwrap();
    std::thread::sleep(Duration::from_millis(100));
    deliver(&rt, &sink, &["{\"n\":4}"]).unwrap();
    assert_eq!(
        recv(&rx),
        (1, "{\"n\":4}".to_string()),
        "a new connection after the server closed the kept one"
    );
}

#[test]
fn an_expired_keepalive_opens_a_new_connection_and_a_dead_server_is_an_error() {
    let (port, rx) = listener();
    let rt = runtime();
    let keepalive = Some(Duration::from_millis(50));
    let sink = TcpSink::new(
        "127.0.0.1".into(),
        port,
        Duration::from_secs(5),
        keepalive,
        None,
    )
    .unwrap();
    deliver(&rt, &sink, &["{\"n\":1}"]).unwrap();
    assert_eq!(recv(&rx).0, 0);
    std::thread::sleep(Duration::from_millis(120));
    deliver(&rt, &sink, &["{\"n\":2}"]).unwrap();
    assert_eq!(recv(&rx).0, 1, "the idle connection outlived keepalive");

    let closed = TcpListener::bind("127.0.0.1:0").unwrap();
    let dead_port = closed.local_addr().unwrap().port();
    drop(closed);
    let dead = TcpSink::new(
        "127.0.0.1".into(),
        dead_port,
        Duration::from_secs(5),
        None,
        None,
    )
    .unwrap();
    let err = deliver(&rt, &dead, &["{}"]).unwrap_err();
    assert!(
        err.starts_with(&format!("failed to connect to 127.0.0.1:{dead_port}")),
        "{err}"
    );
}

#[test]
fn tls_sni_must_be_a_server_name_rustls_can_send() {
    let sink = |sni| {
        TcpSink::new(
            "logs.test".into(),
            1,
            Duration::from_secs(1),
            None,
            Some(sni),
        )
    };
    assert!(sink(None).is_ok(), "no SNI");
    assert!(sink(Some("logs.example.com")).is_ok());
    assert!(sink(Some("10.0.0.1")).is_ok(), "accepted, not sent");
    let err = sink(Some("not a name")).err().expect("refused");
    assert_eq!(err, "tls_sni 'not a name' is not a valid server name");
    let config = load("{host: a.test, port: 1, tls: true, tls_sni: 'not a name'}").unwrap();
    let compiled = Registry::builtin().compile(&config);
    let errors = compiled.err().expect("the plugin does not build");
    assert!(
        errors[0].message.contains("not a valid server name"),
        "{errors:?}"
    );
}
