use super::*;

#[test]
fn parses_targets() {
    let table: &[(&str, Option<Target>)] = &[
        ("nginx", Some(Target::Nginx)),
        ("nginx-lua", Some(Target::NginxLua)),
        ("bin:/x/sluice", Some(Target::Bin("/x/sluice".into()))),
        ("git:HEAD~1", Some(Target::Git("HEAD~1".into()))),
        ("git:", None),
        ("bin:", None),
        ("haproxy", None),
    ];
    for (s, want) in table {
        assert_eq!(Target::parse(s).ok(), *want, "{s}");
        if let Some(t) = want {
            assert_eq!(&t.label(), s);
        }
    }
    assert!(Target::Nginx.is_peer() && !Target::Git("x".into()).is_peer());
}

fn peer_config(protocol: crate::cases::Protocol, tls: bool) -> String {
    let (cert, key) = (
        std::path::Path::new("/c.pem"),
        std::path::Path::new("/k.pem"),
    );
    nginx::config(&nginx::Peer {
        lua: None,
        workers: 1,
        root: std::path::Path::new("/tmp/p"),
        listen: "127.0.0.1:8000".parse().unwrap(),
        ready: "127.0.0.1:8001".parse().unwrap(),
        upstream: "127.0.0.1:9000",
        tls: tls.then_some((cert, key)),
        protocol,
    })
}

#[test]
fn nginx_proxies_each_protocol_its_way() {
    use crate::cases::Protocol;
    let http = peer_config(Protocol::Http, false);
    assert!(http.contains("listen 127.0.0.1:8000 backlog"), "{http}");
    assert!(http.contains("proxy_set_header Connection \"\";"), "{http}");
    assert!(!http.contains("grpc_pass"), "{http}");

    let ws = peer_config(Protocol::WebSocket, false);
    assert!(
        ws.contains("proxy_set_header Upgrade $http_upgrade;"),
        "{ws}"
    );
    assert!(
        ws.contains("proxy_set_header Connection $connection_upgrade;"),
        "{ws}"
    );
    assert!(ws.contains("map $http_upgrade $connection_upgrade"), "{ws}");

    // h2c only on the proxy listener, so readiness is probed on a plain one.
    let grpc = peer_config(Protocol::Grpc, false);
    assert!(
        grpc.contains("listen 127.0.0.1:8000 http2 backlog"),
        "{grpc}"
    );
    assert!(grpc.contains("listen 127.0.0.1:8001 backlog"), "{grpc}");
    assert!(grpc.contains("grpc_pass grpc://perf_upstream;"), "{grpc}");
    assert!(grpc.contains("keepalive 256;"), "{grpc}");
    assert!(!grpc.contains("proxy_pass"), "{grpc}");

    let grpcs = peer_config(Protocol::Grpc, true);
    assert!(
        grpcs.contains("listen 127.0.0.1:8000 ssl http2 backlog"),
        "{grpcs}"
    );
    assert_eq!(grpcs.matches("listen 127.0.0.1:8001").count(), 1, "{grpcs}");
}
