//! hmac-auth through the real binary: signatures made by Python's `hmac`/`hashlib` (an implementation
//! independent of Sluice's), every algorithm, every 401 with Kong's message, `Proxy-Authorization`,
//! `hide_credentials`, `anonymous`, the body `Digest`, and credentials through the Admin API and
//! `GET /config`.

use client::{digest, http_date, message, params, send, sign};
use sluice_testkit::{EchoUpstream, Gateway};

#[path = "plugins_hmac/client.rs"]
mod client;
#[path = "plugins_hmac/credentials.rs"]
mod credentials;

const BIN: &str = env!("CARGO_BIN_EXE_sluice");

const NO_DATE: &str = "HMAC signature cannot be verified, a valid date or x-date header is required for HMAC Authentication";
const NOT_VALID: &str = "HMAC signature cannot be verified";
const NOT_SAME: &str = "HMAC signature does not match";

fn config(port: u16) -> String {
    format!(
        r#"_format_version: "3.0"
services:
- name: s
  url: http://127.0.0.1:{port}
  routes:
  - name: signed
    paths: [/signed]
    plugins:
    - {{name: hmac-auth, config: {{hide_credentials: true, realm: sluice}}}}
  - name: strict
    paths: [/strict]
    plugins:
    - name: hmac-auth
      config:
        algorithms: [hmac-sha256]
        enforce_headers: [date, request-line]
        validate_request_body: true
        clock_skew: 60
  - name: open
    paths: [/open]
    plugins:
    - {{name: hmac-auth, config: {{anonymous: guest}}}}
consumers:
- username: alice
  custom_id: A1
  hmacauth_credentials: [{{username: alice-hmac, secret: alice-secret}}]
- username: guest
hmacauth_credentials: [{{consumer: alice, username: alice-gen}}]
"#
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signatures_and_kong_messages() {
    let up = EchoUpstream::start();
    let gw = Gateway::builder(BIN)
        .config_yaml(&config(up.port()))
        .start();
    let url = |p: &str| gw.proxy_url(p);
    let date = http_date(0);
    let line = |method: &str, path: &str| format!("{method} {path} HTTP/1.1");
    let signed = |alg: &str, path: &str| {
        let data = format!("date: {date}\n{}", line("GET", path));
        params(
            "alice-hmac",
            alg,
            "date request-line",
            &sign(alg, "alice-secret", &data),
        )
    };

    // No credentials at all: Kong's plain 401, with the realm (or just `hmac` without one).
    let (status, headers, body) = send("GET", url("/signed"), &[], "").await;
    assert_eq!(
        (status, body["message"].as_str()),
        (401, Some("Unauthorized"))
    );
    assert_eq!(headers["www-authenticate"], "hmac realm=\"sluice\"");
    let (_, headers, _) = send("GET", url("/strict"), &[], "").await;
    assert_eq!(headers["www-authenticate"], "hmac");

    // Every algorithm, signed over the date and the request line; the consumer reaches the upstream and
    // hide_credentials removed the signature.
    for alg in ["sha1", "sha256", "sha384", "sha512"] {
        let auth = signed(alg, "/signed/x?y=1");
        let (status, _, echo) = send(
            "GET",
            url("/signed/x?y=1"),
            &[
                ("date", &date),
                ("authorization", &auth),
                ("x-consumer-username", "forged"),
            ],
            "",
        )
        .await;
        assert_eq!(status, 200, "{alg}: {echo}");
        let h = &echo["headers"];
        assert_eq!(h["x-consumer-username"], "alice", "{alg}");
        assert_eq!(h["x-consumer-custom-id"], "A1");
        assert_eq!(h["x-credential-identifier"], "alice-hmac");
        assert!(h.get("authorization").is_none(), "hide_credentials: {h}");
        assert!(h.get("x-anonymous-consumer").is_none());
    }

    // The date: missing, too far off, unparsable; X-Date counts when Date does not.
    let auth = signed("sha256", "/signed");
    let old = http_date(-301);
    for headers in [
        vec![("authorization", auth.as_str())],
        vec![("authorization", &auth), ("date", &old)],
        vec![("authorization", &auth), ("date", "yesterday")],
        vec![
            ("authorization", &auth),
            ("x-date", &old),
            ("date", "yesterday"),
        ],
    ] {
        assert_eq!(
            message("GET", url("/signed"), &headers, "").await,
            (401, NO_DATE.into())
        );
    }
    let xdate = {
        let data = format!("x-date: {date}\n{}", line("GET", "/signed"));
        params(
            "alice-hmac",
            "sha256",
            "x-date request-line",
            &sign("sha256", "alice-secret", &data),
        )
    };
    let headers = [
        ("authorization", xdate.as_str()),
        ("x-date", &date),
        ("date", &old),
    ];
    assert_eq!(send("GET", url("/signed"), &headers, "").await.0, 200);

    // Wrong signature, wrong secret, unknown user, unreadable parameters.
    let with = |auth: &str| [("authorization", auth.to_string()), ("date", date.clone())];
    let wrong_path = signed("sha256", "/signed/other");
    let wrong_secret = params(
        "alice-hmac",
        "sha256",
        "date",
        &sign("sha256", "not-hers", &format!("date: {date}")),
    );
    let unknown = params(
        "nobody",
        "sha256",
        "date",
        &sign("sha256", "alice-secret", &format!("date: {date}")),
    );
    let cases = [
        (wrong_path, NOT_SAME),
        (wrong_secret, NOT_SAME),
        (
            signed("sha256", "/signed").replace("sha256\"", "sha512\""),
            NOT_SAME,
        ),
        (unknown, NOT_VALID),
        (
            r#"hmac username="alice-hmac", signature="x""#.into(),
            NOT_VALID,
        ),
        ("Basic YTpi".into(), NOT_VALID),
        (
            signed("sha256", "/signed").replace("hmac-sha256", "hmac-md5"),
            NOT_VALID,
        ),
    ];
    for (auth, expected) in cases {
        let h = with(&auth);
        let h: Vec<(&str, &str)> = h.iter().map(|(k, v)| (*k, v.as_str())).collect();
        assert_eq!(
            message("GET", url("/signed"), &h, "").await,
            (401, expected.into()),
            "{auth}"
        );
    }

    // Other headers and @request-target sign too; a listed header the request lacks signs as `name:`.
    let data = format!("date: {date}\nx-custom: v1\n@request-target: get /signed/t?q\nabsent:");
    let auth = params(
        "alice-hmac",
        "sha384",
        "date x-custom @request-target absent",
        &sign("sha384", "alice-secret", &data),
    );
    let headers = [
        ("authorization", auth.as_str()),
        ("date", &date),
        ("x-custom", "v1"),
    ];
    assert_eq!(send("GET", url("/signed/t?q"), &headers, "").await.0, 200);
    let headers = [
        ("authorization", auth.as_str()),
        ("date", &date),
        ("x-custom", "v2"),
    ];
    assert_eq!(
        message("GET", url("/signed/t?q"), &headers, "").await.1,
        NOT_SAME
    );

    // Proxy-Authorization is read first; hide_credentials removes it and leaves Authorization alone.
    let auth = signed("sha1", "/signed");
    let headers = [
        ("proxy-authorization", auth.as_str()),
        ("authorization", "Bearer other"),
        ("date", &date),
    ];
    let (status, _, echo) = send("GET", url("/signed"), &headers, "").await;
    assert_eq!(status, 200);
    assert_eq!(echo["headers"]["authorization"], "Bearer other");
    assert!(echo["headers"].get("proxy-authorization").is_none());
    assert_eq!(
        up.requests(),
        7,
        "only the signed requests reached the upstream"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn algorithms_enforced_headers_body_digest_and_anonymous() {
    let up = EchoUpstream::start();
    let gw = Gateway::builder(BIN)
        .config_yaml(&config(up.port()))
        .start();
    let url = |p: &str| gw.proxy_url(p);
    let date = http_date(0);
    let body = r#"{"amount": 10}"#;
    let data = format!("date: {date}\nPOST /strict HTTP/1.1");
    let auth = |alg: &str, headers: &str, data: &str| {
        params("alice-hmac", alg, headers, &sign(alg, "alice-secret", data))
    };
    let good = auth("sha256", "date request-line", &data);
    let dig = digest(body);
    let post = |auth: &str, digest: &str, body: &str| {
        let headers = [
            ("authorization", auth.to_string()),
            ("date", date.clone()),
            ("digest", digest.to_string()),
        ];
        let url = url("/strict");
        let body = body.to_string();
        async move {
            let h: Vec<(&str, &str)> = headers
                .iter()
                .filter(|(_, v)| !v.is_empty())
                .map(|(k, v)| (*k, v.as_str()))
                .collect();
            send("POST", url, &h, &body).await
        }
    };
    let (status, _, echo) = post(&good, &dig, body).await;
    assert_eq!(status, 200, "{echo}");
    assert_eq!(echo["body"], body, "the buffered body reaches the upstream");
    // The digest of another body, a body without a digest: Kong's mismatch. No body, no digest: fine.
    let (status, _, v) = post(&good, &digest("{}"), body).await;
    assert_eq!((status, v["message"].as_str()), (401, Some(NOT_SAME)));
    let (status, _, v) = post(&good, "", body).await;
    assert_eq!((status, v["message"].as_str()), (401, Some(NOT_SAME)));
    assert_eq!(post(&good, "", "").await.0, 200);
    // Only hmac-sha256 is allowed here, and the date and request line must be signed.
    let (_, _, v) = post(&auth("sha1", "date request-line", &data), &dig, body).await;
    assert_eq!(v["message"], NOT_VALID);
    let (_, _, v) = post(
        &auth("sha256", "date", &format!("date: {date}")),
        &dig,
        body,
    )
    .await;
    assert_eq!(v["message"], NOT_VALID);
    // clock_skew: 60 here.
    let late = http_date(-90);
    let late_data = format!("date: {late}\nPOST /strict HTTP/1.1");
    let headers = [
        (
            "authorization",
            auth("sha256", "date request-line", &late_data),
        ),
        ("date", late),
    ];
    let h: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
    assert_eq!(
        message("POST", url("/strict"), &h, "").await,
        (401, NO_DATE.into())
    );

    // anonymous: a failed or missing signature proxies as the guest; a good one as alice, the credentials
    // kept (no hide_credentials).
    let (status, _, echo) = send("GET", url("/open"), &[], "").await;
    assert_eq!(status, 200);
    assert_eq!(echo["headers"]["x-consumer-username"], "guest");
    assert_eq!(echo["headers"]["x-anonymous-consumer"], "true");
    let bad = params("alice-hmac", "sha256", "date", "AAAA");
    let (_, _, echo) = send(
        "GET",
        url("/open"),
        &[("authorization", &bad), ("date", &date)],
        "",
    )
    .await;
    assert_eq!(echo["headers"]["x-consumer-username"], "guest");
    let ok = auth("sha512", "date", &format!("date: {date}"));
    let (_, _, echo) = send(
        "GET",
        url("/open"),
        &[("authorization", &ok), ("date", &date)],
        "",
    )
    .await;
    assert_eq!(echo["headers"]["x-consumer-username"], "alice");
    assert_eq!(echo["headers"]["authorization"], ok.as_str());
    assert!(echo["headers"].get("x-anonymous-consumer").is_none());
}
