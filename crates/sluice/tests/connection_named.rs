//! A client's `Connection` header can drop only the client's own fields (issue 17, defect 1): every plugin
//! that sets upstream request headers, and the gateway's own forwarding headers, reach the upstream even
//! when the client names them in `Connection`.

use serde_json::Value;
use sluice_testkit::{EchoUpstream, Gateway};

const BIN: &str = env!("CARGO_BIN_EXE_sluice");

/// Every header a plugin or the gateway sets on the upstream request in the config below.
const SET_BY_GATEWAY: &str = "X-Anonymous-Consumer, X-Consumer-Username, X-Consumer-ID, \
     X-Consumer-Custom-ID, X-Credential-Identifier, X-Consumer-Groups, Kong-Request-ID, X-Added, \
     X-Replaced, X-Appended, X-Forwarded-For, X-Forwarded-Proto, X-Forwarded-Host, X-Forwarded-Port, \
     X-Forwarded-Path, X-Real-IP, Via";

fn config(port: u16) -> String {
    format!(
        r#"_format_version: "3.0"
services:
- name: s
  url: http://127.0.0.1:{port}
  routes:
  - name: key-anonymous
    paths: [/key-anonymous]
    plugins:
    - {{name: key-auth, config: {{anonymous: guest}}}}
  - name: basic-anonymous
    paths: [/basic-anonymous]
    plugins:
    - {{name: basic-auth, config: {{anonymous: guest}}}}
  - name: jwt-anonymous
    paths: [/jwt-anonymous]
    plugins:
    - {{name: jwt, config: {{anonymous: guest}}}}
  - name: keyed-acl
    paths: [/keyed-acl]
    plugins:
    - {{name: key-auth}}
    - {{name: acl, config: {{allow: [staff]}}}}
  - name: transformed
    paths: [/transformed]
    plugins:
    - name: request-transformer
      config:
        add: {{headers: ["x-added:plugin"]}}
        replace: {{headers: ["x-replaced:plugin"]}}
        append: {{headers: ["x-appended:plugin"]}}
  - name: plain
    paths: [/plain]
plugins:
- name: correlation-id
consumers:
- username: alice
  custom_id: A1
  keyauth_credentials: [{{key: alice-key}}]
  acls: [{{group: staff}}]
- username: guest
  custom_id: G1
"#
    )
}

/// What the upstream received for `path`, sent with `Connection` naming every gateway-set header and
/// forged values for all of them.
async fn upstream_saw(gw: &Gateway, path: &str, extra: &[(&str, &str)]) -> Value {
    let mut headers = vec![("connection", SET_BY_GATEWAY)];
    for name in SET_BY_GATEWAY.split(", ") {
        headers.push((name, "forged"));
    }
    headers.extend_from_slice(extra);
    let (status, _, echo) = sluice_testkit::get_json(&gw.proxy_url(path), &headers).await;
    assert_eq!(status, 200, "{path}: {echo}");
    echo["headers"].clone()
}

fn assert_set(h: &Value, name: &str, want: Option<&str>) {
    let got = h.get(name).and_then(Value::as_str);
    match want {
        Some(w) => assert_eq!(got, Some(w), "{name} in {h}"),
        None => assert!(
            got.is_some_and(|v| !v.is_empty() && !v.contains("forged")),
            "{name} missing or forged in {h}"
        ),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_cannot_strip_what_the_gateway_sets() {
    let up = EchoUpstream::start();
    let gw = Gateway::builder(BIN)
        .config_yaml(&config(up.port()))
        .start();

    for path in ["/key-anonymous", "/basic-anonymous", "/jwt-anonymous"] {
        let h = upstream_saw(&gw, path, &[]).await;
        assert_set(&h, "x-anonymous-consumer", Some("true"));
        assert_set(&h, "x-consumer-username", Some("guest"));
        assert_set(&h, "x-consumer-custom-id", Some("G1"));
        assert_set(&h, "x-consumer-id", None);
        assert!(h.get("x-credential-identifier").is_none(), "{h}");
    }

    let h = upstream_saw(&gw, "/keyed-acl", &[("apikey", "alice-key")]).await;
    assert_set(&h, "x-consumer-username", Some("alice"));
    assert_set(&h, "x-consumer-custom-id", Some("A1"));
    assert_set(&h, "x-consumer-id", None);
    assert_set(&h, "x-credential-identifier", None);
    assert_set(&h, "x-consumer-groups", Some("staff"));
    assert!(h.get("x-anonymous-consumer").is_none(), "{h}");

    let h = upstream_saw(&gw, "/transformed", &[]).await;
    assert_set(&h, "x-added", Some("plugin"));
    assert_set(&h, "kong-request-id", None);
    // `replace` and `append` act on the client's field, which `Connection` removed before the plugin ran.
    assert!(h.get("x-replaced").is_none(), "{h}");
    assert_set(&h, "x-appended", Some("plugin"));

    let h = upstream_saw(&gw, "/plain", &[]).await;
    assert_set(&h, "x-forwarded-for", Some("127.0.0.1"));
    assert_set(&h, "x-real-ip", Some("127.0.0.1"));
    assert_set(&h, "x-forwarded-proto", Some("http"));
    assert_set(&h, "x-forwarded-path", Some("/plain"));
    assert_set(&h, "via", None);
    assert_set(&h, "kong-request-id", None);
    // A client's own field that it names is still dropped: it is meant for this hop only.
    let (_, _, echo) = sluice_testkit::get_json(
        &gw.proxy_url("/plain"),
        &[("connection", "x-private"), ("x-private", "1")],
    )
    .await;
    assert!(echo["headers"].get("x-private").is_none(), "{echo}");
}
