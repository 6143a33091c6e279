//! hmac-auth credentials through the Admin API, `GET /config` and DB mode.

use super::client::{http_date, params, send, sign};
use super::{config, BIN};
use serde_json::Value;
use sluice_testkit::{client, EchoUpstream, Gateway};

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
