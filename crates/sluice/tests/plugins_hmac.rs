//! hmac-auth through the real binary: signatures made by Python's `hmac`/`hashlib` (an implementation
//! independent of Sluice's), every algorithm, every 401 with Kong's message, `Proxy-Authorization`,
//! `hide_credentials`, `anonymous`, the body `Digest`, and credentials through the Admin API and
//! `GET /config`.

use serde_json::Value;
use sluice_testkit::{client, EchoUpstream, Gateway};
use std::io::Write;
use std::process::{Command, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_sluice");

const NO_DATE: &str = "HMAC signature cannot be verified, a valid date or x-date header is required for HMAC Authentication";
const NOT_VALID: &str = "HMAC signature cannot be verified";
const NOT_SAME: &str = "HMAC signature does not match";

/// Runs a Python snippet with `args`, feeding `stdin`; its trimmed output.
fn python(code: &str, args: &[&str], stdin: &[u8]) -> String {
    let mut child = Command::new("python3")
        .arg("-c")
        .arg(code)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3");
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "python failed");
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// base64 of the HMAC (`alg`: sha1, sha256, ...) of `data` with `secret`, by Python.
fn sign(alg: &str, secret: &str, data: &str) -> String {
    python(
        "import sys, hmac, hashlib, base64\n\
         mac = hmac.new(sys.argv[2].encode(), sys.stdin.buffer.read(), getattr(hashlib, sys.argv[1]))\n\
         print(base64.b64encode(mac.digest()).decode())",
        &[alg, secret],
        data.as_bytes(),
    )
}

/// An HTTP date `offset` seconds from now, by Python.
fn http_date(offset: i64) -> String {
    python(
        "import sys, time, email.utils\n\
         print(email.utils.formatdate(time.time() + int(sys.argv[1]), usegmt=True))",
        &[&offset.to_string()],
        b"",
    )
}

/// `Digest: SHA-256=...` of `body`, by Python.
fn digest(body: &str) -> String {
    python(
        "import sys, hashlib, base64\n\
         print('SHA-256=' + base64.b64encode(hashlib.sha256(sys.stdin.buffer.read()).digest()).decode())",
        &[],
        body.as_bytes(),
    )
}

fn params(user: &str, alg: &str, headers: &str, signature: &str) -> String {
    format!(
        r#"hmac username="{user}", algorithm="hmac-{alg}", headers="{headers}", signature="{signature}""#
    )
}

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

/// A request: the status, the response headers and the JSON body (the echo, or Kong's message).
async fn send(
    method: &str,
    url: String,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, reqwest::header::HeaderMap, Value) {
    let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
    let mut req = client().request(method, url).body(body.to_string());
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let resp = req.send().await.unwrap();
    let (status, headers) = (resp.status().as_u16(), resp.headers().clone());
    (status, headers, resp.json().await.unwrap_or(Value::Null))
}

async fn message(method: &str, url: String, headers: &[(&str, &str)], body: &str) -> (u16, String) {
    let (status, _, v) = send(method, url, headers, body).await;
    (status, v["message"].as_str().unwrap_or("").to_string())
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn credentials_through_the_admin_api_and_config_export() {
    let up = EchoUpstream::start();
    let gw = Gateway::builder(BIN)
        .config_yaml(&config(up.port()))
        .start();
    let admin = |p: &str| {
        let url = gw.admin_url(p);
        async move { sluice_testkit::get_json(&url, &[]).await }
    };
    let (status, _, all) = admin("/hmac-auths").await;
    assert_eq!(status, 200);
    let names: Vec<&str> = all["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["username"].as_str().unwrap())
        .collect();
    assert_eq!(names.len(), 2);
    assert!(
        names.contains(&"alice-hmac") && names.contains(&"alice-gen"),
        "{names:?}"
    );
    let (status, _, nested) = admin("/consumers/alice/hmac-auth").await;
    assert_eq!(status, 200);
    assert_eq!(nested["data"].as_array().unwrap().len(), 2);
    let (status, _, guest) = admin("/consumers/guest/hmac-auth").await;
    assert_eq!((status, guest["data"].as_array().unwrap().len()), (200, 0));

    // The generated secret: Kong's shape, readable by its username, and it signs.
    let (status, _, generated) = admin("/hmac-auths/alice-gen").await;
    assert_eq!(status, 200);
    let secret = generated["secret"].as_str().unwrap().to_string();
    assert!(
        secret.len() == 32 && secret.chars().all(|c| c.is_ascii_alphanumeric()),
        "{secret}"
    );
    assert!(generated["consumer"]["id"].is_string() && generated["created_at"].is_i64());
    let date = http_date(0);
    let auth = params(
        "alice-gen",
        "sha256",
        "date",
        &sign("sha256", &secret, &format!("date: {date}")),
    );
    let (status, _, echo) = send(
        "GET",
        gw.proxy_url("/signed"),
        &[("authorization", &auth), ("date", &date)],
        "",
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(echo["headers"]["x-credential-identifier"], "alice-gen");

    // GET /config exports both credentials with their secrets; loading the export keeps them.
    let (_, _, exported) = admin("/config").await;
    let export = exported["config"].as_str().unwrap().to_string();
    assert!(export.contains("hmacauth_credentials"), "{export}");
    assert!(
        export.contains("alice-secret") && export.contains(&secret),
        "{export}"
    );
    let reloaded = client()
        .post(gw.admin_url("/config"))
        .form(&[("config", export.as_str())])
        .send()
        .await
        .unwrap();
    assert!(
        reloaded.status().is_success(),
        "{}",
        reloaded.text().await.unwrap()
    );
    let (_, _, again) = admin("/hmac-auths/alice-gen").await;
    assert_eq!(
        again["secret"],
        secret.as_str(),
        "the exported secret is kept"
    );
    let (status, _, _) = send(
        "GET",
        gw.proxy_url("/signed"),
        &[("authorization", &auth), ("date", &date)],
        "",
    )
    .await;
    assert_eq!(status, 200);
}

/// DB mode: credentials made, changed and cascaded away through the Admin API, each change serving at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn credentials_in_db_mode() {
    use serde_json::json;
    let db = sluice_testkit::TestDb::bootstrapped(BIN, "hmac");
    let gw = db.gateway(BIN, None).start();
    let up = EchoUpstream::start();
    let call = |method: &'static str, path: &str, body: Option<Value>| {
        let url = gw.admin_url(path);
        async move { sluice_testkit::send_json(method, &url, body).await }
    };
    let url = format!("http://127.0.0.1:{}", up.port());
    assert_eq!(
        call("POST", "/services", Some(json!({"name": "s", "url": url})))
            .await
            .0,
        201
    );
    let route = json!({"name": "r", "paths": ["/signed"]});
    assert_eq!(call("POST", "/services/s/routes", Some(route)).await.0, 201);
    let plugin = json!({"name": "hmac-auth", "config": {"algorithms": ["hmac-sha256"]}});
    let (s, p) = call("POST", "/routes/r/plugins", Some(plugin)).await;
    assert_eq!(s, 201, "{p}");
    assert_eq!(p["config"]["clock_skew"], 300);
    assert_eq!(p["config"]["enforce_headers"], json!([]));
    assert_eq!(
        call("POST", "/consumers", Some(json!({"username": "alice"})))
            .await
            .0,
        201
    );
    let (s, cred) = call(
        "POST",
        "/consumers/alice/hmac-auth",
        Some(json!({"username": "a-hmac"})),
    )
    .await;
    assert_eq!(s, 201, "{cred}");
    let secret = cred["secret"].as_str().unwrap().to_string();
    assert_eq!(secret.len(), 32);
    let (s, dup) = call(
        "POST",
        "/hmac-auths",
        Some(json!({"username": "a-hmac", "consumer": {"id": cred["consumer"]["id"]}})),
    )
    .await;
    assert_eq!(s, 409, "{dup}");

    let date = http_date(0);
    let signed = |secret: &str| {
        params(
            "a-hmac",
            "sha256",
            "date",
            &sign("sha256", secret, &format!("date: {date}")),
        )
    };
    let status = |auth: String| {
        let url = gw.proxy_url("/signed");
        let date = date.clone();
        async move {
            send("GET", url, &[("authorization", &auth), ("date", &date)], "")
                .await
                .0
        }
    };
    assert_eq!(status(signed(&secret)).await, 200);
    let (s, _) = call(
        "PATCH",
        "/hmac-auths/a-hmac",
        Some(json!({"secret": "rotated"})),
    )
    .await;
    assert_eq!(s, 200);
    assert_eq!(status(signed(&secret)).await, 401);
    assert_eq!(status(signed("rotated")).await, 200);
    let (_, listed) = call("GET", "/consumers/alice/hmac-auth", None).await;
    assert_eq!(listed["data"][0]["secret"], "rotated");

    // Deleting the consumer deletes its credential (Kong's cascade).
    assert_eq!(call("DELETE", "/consumers/alice", None).await.0, 204);
    assert_eq!(call("GET", "/hmac-auths/a-hmac", None).await.0, 404);
    assert_eq!(status(signed("rotated")).await, 401);
}
