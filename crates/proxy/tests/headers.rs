//! Headers both ways: X-Forwarded-* with and without trusted peers, X-Real-IP, Via, hop-by-hop removal,
//! Kong's gateway headers and the `headers` setting.

mod common;

use common::{get, one_service, Proxy};
use sluice_plugins::Registry;
use sluice_proxy::{HeaderSettings, ProxySettings};
use sluice_testkit::EchoUpstream;

const FORGED: [(&str, &str); 6] = [
    ("x-forwarded-for", "1.1.1.1"),
    ("x-forwarded-proto", "https"),
    ("x-forwarded-host", "edge.test"),
    ("x-forwarded-port", "443"),
    ("x-forwarded-prefix", "/edge"),
    ("x-real-ip", "2.2.2.2"),
];

fn trusting(trusted: &str) -> ProxySettings {
    ProxySettings {
        trusted_ips: vec![trusted.parse().unwrap()],
        ..ProxySettings::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forwarded_headers_from_untrusted_and_trusted_peers() {
    let up = EchoUpstream::start();
    let yaml = one_service(&up.url(), &["paths: [/api]"]);
    let port = |p: &Proxy| p.addr.port().to_string();
    // (trusted_ips, header, expected value; "{port}" is the proxy's port)
    let cases = [
        ("10.9.9.9/32", "x-forwarded-for", "1.1.1.1, 127.0.0.1"),
        ("10.9.9.9/32", "x-forwarded-proto", "http"),
        ("10.9.9.9/32", "x-forwarded-host", "api.test"),
        ("10.9.9.9/32", "x-forwarded-port", "{port}"),
        ("10.9.9.9/32", "x-forwarded-path", "/api/x"),
        ("10.9.9.9/32", "x-forwarded-prefix", "/api"),
        ("10.9.9.9/32", "x-real-ip", "127.0.0.1"),
        ("127.0.0.1/32", "x-forwarded-for", "1.1.1.1, 127.0.0.1"),
        ("127.0.0.1/32", "x-forwarded-proto", "https"),
        ("127.0.0.1/32", "x-forwarded-host", "edge.test"),
        ("127.0.0.1/32", "x-forwarded-port", "443"),
        ("127.0.0.1/32", "x-forwarded-prefix", "/edge"),
        ("127.0.0.1/32", "x-real-ip", "2.2.2.2"),
    ];
    for trusted in ["10.9.9.9/32", "127.0.0.1/32"] {
        let proxy = Proxy::with(&yaml, trusting(trusted), Registry::builtin());
        let mut headers = FORGED.to_vec();
        headers.push(("host", "API.test:9999"));
        let (_, _, body) = get(&proxy.url("/api/x?y=1"), &headers).await;
        for (t, name, want) in cases.iter().filter(|c| c.0 == trusted) {
            let want = want.replace("{port}", &port(&proxy));
            assert_eq!(body["headers"][name], want.as_str(), "trusted {t}: {name}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_prefix_header_when_nothing_was_stripped() {
    let up = EchoUpstream::start();
    let proxy = Proxy::start(&one_service(
        &up.url(),
        &["paths: [/api], strip_path: false"],
    ));
    let (_, _, body) = get(&proxy.url("/api/x"), &[("x-forwarded-prefix", "/forged")]).await;
    assert!(
        body["headers"].get("x-forwarded-prefix").is_none(),
        "{body}"
    );
    assert_eq!(body["path"], "/api/x");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hop_by_hop_headers_are_dropped_both_ways() {
    let up = EchoUpstream::start();
    let proxy = Proxy::start(&one_service(&up.url(), &["paths: [/]"]));
    let (status, headers, body) = get(
        &proxy.url("/"),
        &[
            ("connection", "keep-alive, x-secret"),
            ("x-secret", "1"),
            ("keep-alive", "timeout=5"),
            ("proxy-connection", "keep-alive"),
            ("te", "gzip"),
            ("x-kept", "2"),
            ("x-echo-set-header", "keep-alive: timeout=1"),
            ("x-echo-set-header", "x-up: 3"),
        ],
    )
    .await;
    assert_eq!(status, 200);
    for gone in ["x-secret", "keep-alive", "proxy-connection", "te"] {
        assert!(
            body["headers"].get(gone).is_none(),
            "{gone} reached the upstream"
        );
    }
    assert_eq!(body["headers"]["x-kept"], "2");
    assert!(!headers.contains_key("keep-alive"));
    assert_eq!(headers["x-up"], "3");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gateway_headers_on_proxied_responses() {
    let up = EchoUpstream::start();
    let proxy = Proxy::start(&one_service(&up.url(), &["paths: [/]"]));
    let (_, headers, body) = get(&proxy.url("/"), &[("via", "1.0 client-proxy")]).await;
    let rid = headers["x-kong-request-id"].to_str().unwrap();
    assert_eq!(rid.len(), 32);
    assert_eq!(body["headers"]["x-kong-request-id"], rid);
    let via = format!("1.0 client-proxy, 1.1 {}", sluice_proxy::PRODUCT);
    assert_eq!(body["headers"]["via"], via.as_str());
    assert_eq!(
        headers["via"],
        format!("1.1 {}", sluice_proxy::PRODUCT).as_str()
    );
    assert_eq!(headers["server"], sluice_proxy::PRODUCT);
    for latency in ["x-kong-upstream-latency", "x-kong-proxy-latency"] {
        assert!(headers[latency].to_str().unwrap().parse::<u64>().is_ok());
    }
    assert!(!headers.contains_key("x-kong-response-latency"));
    // An upstream's own Server and Via are kept (Via gets our entry appended).
    let (_, headers, _) = get(
        &proxy.url("/"),
        &[
            ("x-echo-set-header", "server: upstream/1"),
            ("x-echo-set-header", "via: 1.1 inner"),
        ],
    )
    .await;
    assert_eq!(headers["server"], "upstream/1");
    assert_eq!(
        headers["via"],
        format!("1.1 inner, 1.1 {}", sluice_proxy::PRODUCT).as_str()
    );
    // An upstream's fields of Kong's names give way to Kong's: one field each, Kong's value.
    let (_, headers, _) = get(
        &proxy.url("/"),
        &[
            ("x-echo-set-header", "x-kong-upstream-latency: 99999"),
            ("x-echo-set-header", "x-kong-request-id: forged"),
            ("x-echo-set-header", "x-kong-other: kept"),
        ],
    )
    .await;
    let all = |name| headers.get_all(name).iter().collect::<Vec<_>>();
    assert_eq!(all("x-kong-upstream-latency").len(), 1);
    assert_ne!(headers["x-kong-upstream-latency"], "99999");
    assert_eq!(all("x-kong-request-id").len(), 1);
    assert_eq!(headers["x-kong-request-id"].len(), 32);
    assert_eq!(headers["x-kong-other"], "kept");
    assert_eq!(headers["server"], sluice_proxy::PRODUCT);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_headers_setting_turns_them_off() {
    let up = EchoUpstream::start();
    let settings = ProxySettings {
        headers: HeaderSettings::parse("off").unwrap(),
        upstream_request_id: false,
        ..ProxySettings::default()
    };
    let proxy = Proxy::with(
        &one_service(&up.url(), &["paths: [/api]"]),
        settings,
        Registry::builtin(),
    );
    let (_, headers, body) = get(&proxy.url("/api"), &[]).await;
    for name in [
        "via",
        "server",
        "x-kong-request-id",
        "x-kong-upstream-latency",
        "x-kong-proxy-latency",
    ] {
        assert!(!headers.contains_key(name), "{name}");
    }
    assert!(body["headers"].get("x-kong-request-id").is_none());
    let (status, headers, body) = get(&proxy.url("/nowhere"), &[]).await;
    assert_eq!(status, 404);
    assert_eq!(body["request_id"].as_str().map(str::len), Some(32));
    for name in ["server", "x-kong-request-id", "x-kong-response-latency"] {
        assert!(!headers.contains_key(name), "{name}");
    }
}
