//! The Kong 3.9.1 plugin fixtures through the real binary: after `POST /config` of each file unchanged, its
//! plugins answer with the settings Kong exported (statuses, headers, realms and messages of
//! `kong/plugins/*/handler.lua` at 3.9.1), so a field Sluice read but did not apply shows here.

use super::live::route_of;
use super::{fixture, BIN};
use crate::support::reload;
use sluice_testkit::Gateway;

/// A gateway holding the fixture `name`, loaded through `POST /config`.
async fn gateway_with(name: &str) -> Gateway {
    let gw = Gateway::builder(BIN)
        .config_yaml("_format_version: \"3.0\"\n")
        .start();
    reload(&gw, &fixture(name)).await;
    gw
}

/// A request through the proxy without following redirects: status, one header's value, body.
async fn send(
    gw: &Gateway,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
    header: &str,
) -> (u16, String, String) {
    let plain = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let mut req = plain
        .request(method.parse().unwrap(), gw.proxy_url(path))
        .body(body.to_string());
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let resp = req.send().await.expect("proxy request");
    let value = resp
        .headers()
        .get(header)
        .map(|v| v.to_str().unwrap_or_default().to_string());
    let status = resp.status().as_u16();
    (
        status,
        value.unwrap_or_default(),
        resp.text().await.unwrap_or_default(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kong_3_9_traffic_plugins_answer_with_their_exported_settings() {
    let gw = gateway_with("kong-3.9-traffic-plugins.yaml").await;
    let echo = &[("x-fidelity-echo", "1")][..];
    // redirect: 308 to the location, with the request's path and query (`keep_incoming_path`).
    let (status, location, _) = send(&gw, "GET", "/moved/x?a=1", &[], "", "location").await;
    assert_eq!(
        (status, location.as_str()),
        (308, "https://new.fidelity.test/moved/x?a=1")
    );
    // ip-restriction: the configured status and message for a denied client.
    let (status, _, body) = send(&gw, "GET", "/guarded", echo, "", "").await;
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("Blocked by fidelity"), "{body}");
    // request-size-limiting: 10 kilobytes allowed, a length required.
    let big = "x".repeat(20 * 1024);
    let (status, _, body) = send(&gw, "POST", "/limited", echo, &big, "").await;
    assert_eq!(status, 413, "{body}");
    // bot-detection: the deny list, and the allow list beating the built-in bad bots.
    let bot = [("user-agent", "badcrawler/1.0"), echo[0]];
    assert_eq!(send(&gw, "GET", "/limited", &bot, "", "").await.0, 403);
    // correlation-id: its header name, echoed downstream.
    let (status, id, _) = send(&gw, "GET", "/shared", echo, "", "x-fidelity-id").await;
    assert_eq!(status, 200);
    assert!(!id.is_empty(), "no X-Fidelity-ID echoed");
    // cors: a preflight from a configured origin gets the exported methods, max age and credentials.
    let preflight = [
        ("origin", "https://admin.fidelity.test"),
        ("access-control-request-method", "POST"),
    ];
    let (status, methods, _) = send(
        &gw,
        "OPTIONS",
        "/shared",
        &preflight,
        "",
        "access-control-allow-methods",
    )
    .await;
    assert_eq!((status, methods.as_str()), (200, "GET,POST"));
    let (_, age, _) = send(
        &gw,
        "OPTIONS",
        "/shared",
        &preflight,
        "",
        "access-control-max-age",
    )
    .await;
    assert_eq!(age, "3600");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kong_3_9_auth_plugins_answer_with_their_exported_settings() {
    let gw = gateway_with("kong-3.9-auth-plugins.yaml").await;
    // key-auth with acl: alice's key and group pass, carol's key is refused by the acl, no key is a 401
    // with the exported realm.
    let alice = [("apikey", "alice-key")];
    assert_eq!(
        route_of(&gw, "GET", "/keyed", &alice).await,
        (200, "keyed".into())
    );
    let carol = [("x-api-key", "carol-key")];
    assert_eq!(route_of(&gw, "GET", "/keyed", &carol).await.0, 403);
    let (status, realm, _) = send(&gw, "GET", "/keyed", &[], "", "www-authenticate").await;
    assert_eq!((status, realm.as_str()), (401, "Key realm=\"keyed\""));
    // basic-auth: the hashed password of the export still matches `s3cret`; the realm is the exported one.
    let basic = [("authorization", "Basic YWxpY2U6czNjcmV0")];
    assert_eq!(
        route_of(&gw, "GET", "/basic", &basic).await,
        (200, "basic".into())
    );
    let (status, realm, _) = send(&gw, "GET", "/basic", &[], "", "www-authenticate").await;
    assert_eq!((status, realm.as_str()), (401, "Basic realm=\"fidelity\""));
    // jwt: no token is a 401; bob's HS256 token is taken from the exported query argument and cookie names.
    let (status, _, body) = send(&gw, "GET", "/tokens", &[], "", "").await;
    assert_eq!(status, 401, "{body}");
    let token = hs256_token("bob-issuer", "0123456789abcdef0123456789abcdef");
    let path = format!("/tokens?token={token}");
    assert_eq!(
        route_of(&gw, "GET", &path, &[]).await,
        (200, "tokens".into())
    );
    let cookie = format!("fidelity_jwt={token}");
    let by_cookie = [("cookie", cookie.as_str())];
    assert_eq!(
        route_of(&gw, "GET", "/tokens", &by_cookie).await,
        (200, "tokens".into())
    );
    // ldap-auth: no credentials is a 401 with the exported realm, after `header_type` as written (Kong
    // capitalizes only `ldap`).
    let (status, realm, _) = send(&gw, "GET", "/directory", &[], "", "www-authenticate").await;
    assert_eq!((status, realm.as_str()), (401, "basic realm=\"directory\""));
}

/// An HS256 JWT for `iss` valid for ten minutes, signed with `secret` by Python's standard library (an
/// implementation independent of Sluice's).
fn hs256_token(iss: &str, secret: &str) -> String {
    const SCRIPT: &str = r#"
import base64, hashlib, hmac, json, sys, time
b64 = lambda b: base64.urlsafe_b64encode(b).rstrip(b"=").decode()
now = int(time.time())
head = b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
body = b64(json.dumps({"iss": sys.argv[1], "exp": now + 600, "nbf": now - 10}).encode())
mac = hmac.new(sys.argv[2].encode(), f"{head}.{body}".encode(), hashlib.sha256).digest()
print(f"{head}.{body}.{b64(mac)}")
"#;
    let out = std::process::Command::new("python3")
        .args(["-c", SCRIPT, iss, secret])
        .output()
        .expect("python3");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}
