//! response-ratelimiting through the real binary: the upstream (the testkit echo server, told to answer
//! with `X-Kong-Limit`) spends named limits; the gateway counts them, tells the upstream and the client what
//! remains, refuses with 429 once a limit is spent, and hides the usage header.

use sluice_testkit::{client, EchoUpstream, Gateway};

const BIN: &str = env!("CARGO_BIN_EXE_sluice");

fn config(upstream: u16) -> String {
    format!(
        r#"_format_version: "3.0"
services:
- name: s
  url: http://127.0.0.1:{upstream}
  routes:
  - name: media
    paths: [/media]
    plugins:
    - name: response-ratelimiting
      config: {{limit_by: ip, limits: {{videos: {{minute: 3, hour: 100}}, images: {{minute: 50}}}}}}
  - name: strict
    paths: [/strict]
    plugins:
    - name: response-ratelimiting
      config: {{limit_by: ip, block_on_first_violation: true, hide_client_headers: true, limits: {{videos: {{minute: 1}}}}}}
"#
    )
}

/// One request whose response spends `spend` (the echo server sets `X-Kong-Limit` to it): the status, the
/// response headers, the request headers the upstream saw, and the body's length.
async fn call(
    gw: &Gateway,
    path: &str,
    spend: &str,
) -> (u16, reqwest::header::HeaderMap, serde_json::Value, usize) {
    let resp = client()
        .get(gw.proxy_url(path))
        .header("x-echo-set-header", format!("x-kong-limit: {spend}"))
        .send()
        .await
        .unwrap();
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let body = resp.bytes().await.unwrap();
    let echoed = serde_json::from_slice(&body).unwrap_or_default();
    (status, headers, echoed, body.len())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_upstream_spends_named_limits_and_the_gateway_refuses_when_spent() {
    let up = EchoUpstream::start();
    let gw = Gateway::builder(BIN)
        .config_yaml(&config(up.port()))
        .start();

    let (status, headers, echoed, _) = call(&gw, "/media", "videos=2, images=1").await;
    assert_eq!(status, 200);
    // The upstream was told what remained before this request, the smallest over the name's periods.
    assert_eq!(echoed["headers"]["x-ratelimit-remaining-videos"], "3");
    assert_eq!(echoed["headers"]["x-ratelimit-remaining-images"], "50");
    // The client sees each window after this response's spending; the usage header is gone.
    assert_eq!(headers["x-ratelimit-limit-videos-minute"], "3");
    assert_eq!(headers["x-ratelimit-remaining-videos-minute"], "1");
    assert_eq!(headers["x-ratelimit-remaining-videos-hour"], "98");
    assert_eq!(headers["x-ratelimit-remaining-images-minute"], "49");
    assert!(!headers.contains_key("x-kong-limit"));

    // The log phase counts after the response; wait for it to land.
    let mut seen = String::new();
    for _ in 0..50 {
        let (_, _, echoed, _) = call(&gw, "/media", "images=0").await;
        seen = echoed["headers"]["x-ratelimit-remaining-videos"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        if seen == "1" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(seen, "1");
    // Spending the last video is allowed (remaining was 1), then the limit is spent.
    let (status, headers, _, _) = call(&gw, "/media", "videos=1").await;
    assert_eq!(
        (status, &headers["x-ratelimit-remaining-videos-minute"]),
        (200, &"0".parse().unwrap())
    );
    let mut refused = None;
    for _ in 0..50 {
        let (status, headers, _, len) = call(&gw, "/media", "videos=1").await;
        if status == 429 {
            refused = Some((headers, len));
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let (headers, len) = refused.expect("a response spending a spent limit is refused");
    assert_eq!(len, 0, "Kong refuses with no body");
    assert!(!headers.contains_key("x-kong-limit"));
    // A response that spends nothing of the spent limit still passes.
    let (status, _, _, _) = call(&gw, "/media", "images=1").await;
    assert_eq!(status, 200);

    // block_on_first_violation: refused in access, before the upstream, with Kong's message.
    let (status, headers, _, _) = call(&gw, "/strict", "videos=1").await;
    assert_eq!(status, 200);
    assert!(
        !headers.contains_key("x-ratelimit-limit-videos-minute"),
        "hidden"
    );
    let mut body = String::new();
    for _ in 0..50 {
        let resp = client().get(gw.proxy_url("/strict")).send().await.unwrap();
        if resp.status() == 429 {
            body = resp.text().await.unwrap();
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(
        body,
        r#"{"message":"API rate limit exceeded for 'videos'"}"#
    );
    let before = up.requests();
    let resp = client().get(gw.proxy_url("/strict")).send().await.unwrap();
    assert_eq!(resp.status(), 429);
    assert_eq!(
        up.requests(),
        before,
        "refused before the upstream was asked"
    );
}
