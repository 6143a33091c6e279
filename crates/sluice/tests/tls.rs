//! TLS end to end on the real binary: certificate selection by SNI (and after a reload), ALPN h2 and
//! http/1.1, TLS 1.2 and 1.3, session resumption, https-only routes, route `snis`, upstream TLS with
//! verification, SNI, pooling and mTLS, bad certificates at load, and the admin listener over TLS.

use serde_json::{json, Value};
use sluice_testkit::{
    client, handshake, handshake_with, https_client, insecure_client, self_signed, EchoUpstream,
    Gateway, TestCa, TestCert, TlsEchoUpstream,
};
use tokio_rustls::rustls;

const BIN: &str = env!("CARGO_BIN_EXE_sluice");

fn cert_entity(c: &TestCert, snis: &[&str]) -> Value {
    let snis: Vec<Value> = snis.iter().map(|n| json!({ "name": n })).collect();
    json!({"cert": c.cert_pem, "key": c.key_pem, "snis": snis})
}

fn echo_service(up: &EchoUpstream, routes: Value) -> Value {
    json!({"name": "echo", "url": up.url(), "routes": routes})
}

fn default_cert_der(gw: &Gateway) -> Vec<u8> {
    use rustls::pki_types::{pem::PemObject, CertificateDer};
    let pem =
        std::fs::read(gw.prefix().join("ssl/sluice-default-ecdsa.crt")).expect("default cert");
    CertificateDer::from_pem_slice(&pem).expect("PEM").to_vec()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn certificates_are_chosen_by_sni_in_kongs_order_and_follow_reloads() {
    let up = EchoUpstream::start();
    let (exact, prefix, suffix) = (
        self_signed(&["a.test"]),
        self_signed(&["x.wild.test"]),
        self_signed(&["suffix.org"]),
    );
    let config = |exact: &TestCert| {
        json!({
            "_format_version": "3.0",
            "services": [echo_service(&up, json!([{"name": "r", "paths": ["/"]}]))],
            "certificates": [
                cert_entity(exact, &["a.test"]),
                cert_entity(&prefix, &["*.wild.test"]),
                cert_entity(&suffix, &["suffix.*"]),
            ],
        })
        .to_string()
    };
    let gw = Gateway::builder(BIN).config_yaml(&config(&exact)).start();
    let port = gw.proxy_tls_port();
    let tls = insecure_client(&["http/1.1"], false);
    let leaf = |sni: Option<&'static str>| {
        let tls = tls.clone();
        async move { handshake(port, sni, tls).await.expect("handshake").leaf }
    };
    assert_eq!(leaf(Some("a.test")).await, exact.der, "exact name");
    assert_eq!(leaf(Some("A.Test")).await, exact.der, "case-insensitive");
    assert_eq!(
        leaf(Some("x.wild.test")).await,
        prefix.der,
        "prefix wildcard"
    );
    assert_eq!(
        leaf(Some("suffix.net")).await,
        suffix.der,
        "suffix wildcard"
    );
    let default = default_cert_der(&gw);
    assert_eq!(
        leaf(Some("a.b.wild.test")).await,
        default,
        "a wildcard covers one label"
    );
    assert_eq!(leaf(Some("unknown.test")).await, default);
    assert_eq!(leaf(None).await, default, "no SNI");

    let replacement = self_signed(&["a.test"]);
    let resp = client()
        .post(gw.admin_url("/config"))
        .header("content-type", "application/json")
        .body(config(&replacement))
        .send()
        .await
        .expect("POST /config");
    assert_eq!(resp.status(), 201);
    assert_eq!(
        leaf(Some("a.test")).await,
        replacement.der,
        "reload changes the certificate"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_x509_v1_certificate_loads_and_is_served() {
    // Kong's own test certificates are v1 (no extensions), which webpki does not read; rustls clients
    // refuse them too, so the client here is curl (OpenSSL), as a Kong user's would be.
    let up = EchoUpstream::start();
    let config = json!({
        "_format_version": "3.0",
        "services": [echo_service(&up, json!([{"name": "r", "paths": ["/"]}]))],
        "certificates": [{"cert": sluice_testkit::X509_V1_CERT, "key": sluice_testkit::X509_V1_KEY,
                          "snis": [{"name": "v1.test"}]}],
    });
    let gw = Gateway::builder(BIN)
        .config_yaml(&config.to_string())
        .start();
    let port = gw.proxy_tls_port();
    let out = std::process::Command::new("curl")
        .args(["-sk", "-v", "-o", "/dev/null", "-w", "%{http_code}"])
        .arg("--resolve")
        .arg(format!("v1.test:{port}:127.0.0.1"))
        .arg(format!("https://v1.test:{port}/"))
        .output()
        .expect("curl");
    let verbose = String::from_utf8_lossy(&out.stderr);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "200", "{verbose}");
    assert!(verbose.contains("CN=v1.test"), "{verbose}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn alpn_protocol_versions_and_resumption() {
    let up = EchoUpstream::start();
    let yaml = json!({
        "_format_version": "3.0",
        "services": [echo_service(&up, json!([{"name": "r", "paths": ["/"]}]))],
    })
    .to_string();
    let gw = Gateway::builder(BIN).config_yaml(&yaml).start();
    let port = gw.proxy_tls_port();

    let h2 = handshake(
        port,
        Some("a.test"),
        insecure_client(&["h2", "http/1.1"], false),
    )
    .await
    .expect("h2 handshake");
    assert_eq!(h2.alpn.as_deref(), Some("h2"));
    assert_eq!(h2.version, Some(rustls::ProtocolVersion::TLSv1_3));
    let h1 = handshake(port, Some("a.test"), insecure_client(&["http/1.1"], false))
        .await
        .expect("http/1.1 handshake");
    assert_eq!(h1.alpn.as_deref(), Some("http/1.1"));

    let tls12 = insecure_client(&["http/1.1"], true);
    let name = rustls::pki_types::ServerName::try_from("a.test").expect("name");
    let first = handshake_with(port, name.clone(), tls12.clone())
        .await
        .expect("TLS 1.2");
    assert_eq!(first.version, Some(rustls::ProtocolVersion::TLSv1_2));
    assert!(!first.resumed);
    let second = handshake_with(port, name, tls12)
        .await
        .expect("TLS 1.2 again");
    assert!(second.resumed, "the second handshake resumes the session");

    for (http1_only, want) in [
        (false, reqwest::Version::HTTP_2),
        (true, reqwest::Version::HTTP_11),
    ] {
        let resp = https_client("a.test", port, http1_only)
            .get(format!("https://a.test:{port}/hello"))
            .send()
            .await
            .expect("https request");
        assert_eq!(resp.status(), 200);
        assert_eq!(resp.version(), want);
        let body: Value = resp.json().await.expect("echo");
        assert_eq!(body["path"], "/hello");
        assert_eq!(body["headers"]["x-forwarded-proto"], "https");
        assert_eq!(body["headers"]["x-forwarded-port"], port.to_string());
    }

    let curl = std::process::Command::new("curl")
        .args([
            "-sk",
            "--http2",
            "-o",
            "/dev/null",
            "-w",
            "%{http_version} %{http_code}",
        ])
        .arg(format!("https://127.0.0.1:{port}/"))
        .output();
    if let Ok(out) = curl {
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            "2 200",
            "curl --http2"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_only_routes_redirects_and_route_snis() {
    let up = EchoUpstream::start();
    let yaml = json!({
        "_format_version": "3.0",
        "services": [echo_service(&up, json!([
            {"name": "secure", "protocols": ["https"], "paths": ["/secure"]},
            {"name": "moved", "protocols": ["https"], "paths": ["/moved"], "https_redirect_status_code": 301},
            {"name": "by-sni", "protocols": ["https"], "snis": ["sni.test"], "paths": ["/sni"]},
        ]))],
    })
    .to_string();
    let gw = Gateway::builder(BIN).config_yaml(&yaml).start();
    let port = gw.proxy_tls_port();

    let resp = client()
        .get(gw.proxy_url("/secure"))
        .send()
        .await
        .expect("http");
    assert_eq!(resp.status(), 426);
    let body: Value = resp.json().await.expect("json");
    assert_eq!(body["message"], "Please use HTTPS protocol");

    let no_redirects = reqwest::Client::builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client");
    let resp = no_redirects
        .get(gw.proxy_url("/moved/x?q=1"))
        .header("host", "shop.test")
        .send()
        .await
        .expect("http");
    assert_eq!(resp.status(), 301);
    assert_eq!(resp.headers()["location"], "https://shop.test/moved/x?q=1");

    let https = |sni: &'static str, path: &'static str| {
        let url = format!("https://{sni}:{port}{path}");
        async move {
            let resp = https_client(sni, port, false)
                .get(url)
                .send()
                .await
                .expect("https");
            resp.status().as_u16()
        }
    };
    assert_eq!(https("a.test", "/secure").await, 200);
    assert_eq!(https("sni.test", "/sni").await, 200);
    assert_eq!(
        https("other.test", "/sni").await,
        404,
        "route snis must match"
    );
}

/// An upstream entity whose `host_header` names the upstream certificate, so the gateway sends that SNI.
fn tls_upstream(name: &str, port: u16) -> Value {
    json!({"name": name, "host_header": "upstream.test", "targets": [{"target": format!("127.0.0.1:{port}")}]})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstream_tls_verifies_sends_sni_and_pools() {
    let ca = TestCa::new("Test CA");
    let other_ca = TestCa::new("Other CA");
    let up = TlsEchoUpstream::start(&ca.issue(&["upstream.test"]), None);
    let p = up.port();
    let ca_id = "6d8bd8d4-1b8e-4b54-9a77-3a0a7f6b0001";
    let other_id = "6d8bd8d4-1b8e-4b54-9a77-3a0a7f6b0002";
    let yaml = json!({
        "_format_version": "3.0",
        "ca_certificates": [{"id": ca_id, "cert": ca.pem}, {"id": other_id, "cert": other_ca.pem}],
        "upstreams": [tls_upstream("up-tls", p)],
        "services": [
            {"name": "plain-ip", "url": format!("https://127.0.0.1:{p}"),
             "routes": [{"name": "a", "paths": ["/noverify"]}]},
            {"name": "verified", "host": "up-tls", "protocol": "https", "port": 443,
             "tls_verify": true, "ca_certificates": [ca_id],
             "routes": [{"name": "b", "paths": ["/verified"]}]},
            {"name": "wrong-ca", "host": "up-tls", "protocol": "https", "port": 443,
             "tls_verify": true, "ca_certificates": [other_id],
             "routes": [{"name": "c", "paths": ["/wrong-ca"]}]},
        ],
    })
    .to_string();
    let gw = Gateway::builder(BIN).config_yaml(&yaml).workers(1).start();

    let (status, _, body) = sluice_testkit::get_json(&gw.proxy_url("/noverify"), &[]).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["tls"]["sni"], Value::Null, "an IP host sends no SNI");

    let before = up.connections();
    for _ in 0..5 {
        let (status, _, body) = sluice_testkit::get_json(&gw.proxy_url("/verified"), &[]).await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["tls"]["sni"], "upstream.test");
        assert_eq!(body["headers"]["host"], format!("upstream.test:{p}"));
    }
    assert_eq!(
        up.connections() - before,
        1,
        "pooled TLS connections are reused"
    );

    let (status, _, _) = sluice_testkit::get_json(&gw.proxy_url("/wrong-ca"), &[]).await;
    assert_eq!(status, 502, "verification against the wrong CA fails");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstream_mtls_presents_the_client_certificate() {
    let ca = TestCa::new("Test CA");
    let up = TlsEchoUpstream::start(&ca.issue(&["upstream.test"]), Some(&ca.pem));
    let client_cert = ca.issue(&["gateway.test"]);
    let cert_id = "6d8bd8d4-1b8e-4b54-9a77-3a0a7f6b0003";
    let url = format!("https://127.0.0.1:{}", up.port());
    let yaml = json!({
        "_format_version": "3.0",
        "certificates": [{"id": cert_id, "cert": client_cert.cert_pem, "key": client_cert.key_pem}],
        "services": [
            {"name": "anonymous", "url": url, "routes": [{"name": "a", "paths": ["/anonymous"]}]},
            {"name": "mtls", "url": url, "client_certificate": {"id": cert_id},
             "routes": [{"name": "b", "paths": ["/mtls"]}]},
        ],
    })
    .to_string();
    let gw = Gateway::builder(BIN).config_yaml(&yaml).start();
    let (status, _, _) = sluice_testkit::get_json(&gw.proxy_url("/anonymous"), &[]).await;
    assert_eq!(status, 502, "the upstream requires a client certificate");
    let (status, _, body) = sluice_testkit::get_json(&gw.proxy_url("/mtls"), &[]).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["tls"]["client_cert"], true);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_certificates_are_rejected_at_load_and_the_old_config_keeps_serving() {
    let up = EchoUpstream::start();
    let good = self_signed(&["a.test"]);
    let other = self_signed(&["b.test"]);
    let doc = |cert: Value| {
        json!({
            "_format_version": "3.0",
            "services": [echo_service(&up, json!([{"name": "r", "paths": ["/"]}]))],
            "certificates": [cert],
        })
        .to_string()
    };
    let gw = Gateway::builder(BIN)
        .config_yaml(&doc(cert_entity(&good, &["a.test"])))
        .start();
    let post = |body: String| {
        let url = gw.admin_url("/config");
        async move {
            let resp = client()
                .post(url)
                .header("content-type", "application/json")
                .body(body)
                .send()
                .await
                .expect("POST");
            (
                resp.status().as_u16(),
                resp.json::<Value>().await.unwrap_or_default(),
            )
        }
    };
    let mismatched = json!({"cert": good.cert_pem, "key": other.key_pem});
    let (status, body) = post(doc(mismatched.clone())).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(
        body["fields"]["certificates"][0]["@entity"],
        json!(["certificate does not match key"]),
        "{body}"
    );
    let garbage = json!({"cert": "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----", "key": good.key_pem});
    let (status, body) = post(doc(garbage)).await;
    assert_eq!(status, 400, "{body}");
    assert!(
        body["fields"]["certificates"][0]["cert"].is_string(),
        "{body}"
    );
    let leaf = handshake(
        gw.proxy_tls_port(),
        Some("a.test"),
        insecure_client(&[], false),
    )
    .await
    .expect("handshake")
    .leaf;
    assert_eq!(leaf, good.der, "the old certificate still serves");

    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("bad.json");
    std::fs::write(&file, doc(mismatched)).expect("write");
    let out = std::process::Command::new(BIN)
        .args(["config", "check"])
        .arg(&file)
        .output()
        .expect("config check");
    assert!(!out.status.success());
    let text =
        String::from_utf8_lossy(&out.stderr).to_string() + &String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("certificate does not match key"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admin_over_tls_and_configured_default_certificate() {
    let admin_port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("port")
        .port();
    let dir = tempfile::tempdir().expect("tempdir");
    let own = self_signed(&["own.test"]);
    let (cert, key) = (dir.path().join("own.crt"), dir.path().join("own.key"));
    std::fs::write(&cert, &own.cert_pem).expect("write");
    std::fs::write(&key, &own.key_pem).expect("write");
    let gw = Gateway::builder(BIN)
        .config_yaml("_format_version: \"3.0\"\n")
        .env(
            "SLUICE_ADMIN_LISTEN",
            &format!("127.0.0.1:{admin_port} ssl"),
        )
        .env("SLUICE_SSL_CERT", &cert.display().to_string())
        .env("SLUICE_SSL_CERT_KEY", &key.display().to_string())
        .start();
    let resp = https_client("localhost", admin_port, true)
        .get(format!("https://localhost:{admin_port}/status"))
        .send()
        .await
        .expect("admin over TLS");
    assert_eq!(resp.status(), 200);
    let plain = client()
        .get(format!("http://127.0.0.1:{admin_port}/status"))
        .send()
        .await;
    assert!(
        plain.map_or(true, |r| r.status() == 400),
        "plain HTTP is not served on the TLS admin port"
    );
    let leaf = handshake(
        gw.proxy_tls_port(),
        Some("any.test"),
        insecure_client(&[], false),
    )
    .await
    .expect("handshake")
    .leaf;
    assert_eq!(leaf, own.der, "ssl_cert is the proxy's default certificate");
}
