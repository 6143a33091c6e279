//! The oauth2 plugin through the real binary in DB mode on the local PostgreSQL (each test makes its own
//! database): every grant flow end to end over HTTPS, PKCE (checked with challenges Python computes),
//! refresh (new and reused refresh tokens), expiry, scopes, bad clients and redirect URIs, tokens used on
//! the proxied routes with Kong's upstream headers and 401s, `global_credentials`, `anonymous`,
//! `hide_credentials`, the credentials through the Admin API, and the refusal in DB-less mode.

use reqwest::header::HeaderMap;
use serde_json::{json, Value};
use sluice_testkit::{https_client, send_json, EchoUpstream, Gateway, TestDb};
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_sluice");
const PROVISION: &str = "provision-key-123";
const HOST: &str = "oauth.test";
const WRONG_REDIRECT: &str =
    "Invalid redirect_uri that does not match with any redirect_uri created with the application";
const INVALID_TOKEN: &str = "The access token is invalid or has expired";

/// A DB-mode node with an echo upstream and the services, routes, plugins and credentials below.
struct Node {
    gw: Gateway,
    https: reqwest::Client,
    _up: EchoUpstream,
    _db: TestDb,
}

/// A response: status, headers, JSON body (`null` when not JSON).
type Reply = (u16, HeaderMap, Value);

impl Node {
    async fn admin(&self, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
        send_json(method, &self.gw.admin_url(path), body).await
    }

    async fn created(&self, path: &str, body: Value) -> Value {
        let (status, made) = self.admin("POST", path, Some(body)).await;
        assert_eq!(status, 201, "POST {path}: {made}");
        made
    }

    fn url(&self, path: &str) -> String {
        format!("https://{HOST}:{}{path}", self.gw.proxy_tls_port())
    }

    async fn send(&self, req: reqwest::RequestBuilder) -> Reply {
        let resp = req.send().await.unwrap();
        let (status, headers) = (resp.status().as_u16(), resp.headers().clone());
        (status, headers, resp.json().await.unwrap_or(Value::Null))
    }

    /// A form POST to `path` over HTTPS.
    async fn post<F: serde::Serialize + ?Sized>(&self, path: &str, form: &F) -> Reply {
        self.send(self.https.post(self.url(path)).form(form)).await
    }

    /// A GET of the proxied route with extra headers.
    async fn get(&self, path: &str, headers: &[(&str, &str)]) -> Reply {
        let mut req = self.https.get(self.url(path));
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        self.send(req).await
    }

    /// A token from the client credentials grant of the confidential client on `service`'s route.
    async fn client_token(&self, route: &str, client: (&str, &str)) -> String {
        let (status, _, body) = self
            .post(
                &format!("{route}/oauth2/token"),
                &[
                    ("grant_type", "client_credentials"),
                    ("client_id", client.0),
                    ("client_secret", client.1),
                    ("scope", "email"),
                ],
            )
            .await;
        assert_eq!(status, 200, "{body}");
        body["access_token"].as_str().unwrap().to_string()
    }

    /// A code from `/s1/oauth2/authorize` for `extra` parameters (client, PKCE).
    async fn code(&self, extra: &[(&str, &str)]) -> String {
        let mut form = vec![
            ("response_type", "code"),
            ("provision_key", PROVISION),
            ("authenticated_userid", "user-1"),
            ("scope", "email"),
        ];
        form.extend_from_slice(extra);
        let (status, _, body) = self.post("/s1/oauth2/authorize", &form).await;
        assert_eq!(status, 200, "{body}");
        query_of(&body["redirect_uri"])["code"].clone()
    }
}

/// The parameters of a redirect URI's query (or fragment), decoded.
fn query_of(uri: &Value) -> std::collections::HashMap<String, String> {
    let uri = uri
        .as_str()
        .unwrap_or_else(|| panic!("no redirect_uri: {uri}"));
    let params = uri.split_once(['?', '#']).map_or("", |(_, q)| q);
    let params = params.rsplit('#').next().unwrap_or_default();
    reqwest::Url::parse(&format!("http://x/?{params}"))
        .unwrap()
        .query_pairs()
        .into_owned()
        .collect()
}

fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

fn error(code: &str, description: &str) -> Value {
    json!({"error": code, "error_description": description})
}

/// Python's base64url(sha256(verifier)), unpadded: the S256 challenge made independently.
fn s256(verifier: &str) -> String {
    let out = Command::new("python3")
        .args([
            "-c",
            "import base64,hashlib,sys; print(base64.urlsafe_b64encode(hashlib.sha256(sys.argv[1].encode()).digest()).decode().rstrip('='))",
            verifier,
        ])
        .output()
        .expect("python3");
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

async fn node() -> Node {
    let db = TestDb::bootstrapped(BIN, "oauth2");
    let gw = db.gateway(BIN, None).start();
    let up = EchoUpstream::start();
    let https = https_client(HOST, gw.proxy_tls_port(), true);
    let n = Node {
        gw,
        https,
        _up: up,
        _db: db,
    };
    let upstream = n._up.url();
    for s in ["s1", "s2", "s3", "s4"] {
        n.created("/services", json!({"name": s, "url": upstream}))
            .await;
        n.created(
            &format!("/services/{s}/routes"),
            json!({"name": s, "paths": [format!("/{s}")]}),
        )
        .await;
    }
    let flows = json!({"enable_authorization_code": true, "enable_client_credentials": true,
                       "enable_implicit_grant": true, "enable_password_grant": true});
    let mut main = json!({"scopes": ["email", "profile"], "mandatory_scope": true,
                          "provision_key": PROVISION});
    main.as_object_mut()
        .unwrap()
        .extend(flows.as_object().unwrap().clone());
    let plugins = [
        ("s1", main),
        (
            "s2",
            json!({"enable_password_grant": true, "enable_client_credentials": true, "token_expiration": 2,
                   "reuse_refresh_token": true, "hide_credentials": true, "realm": "api",
                   "provision_key": PROVISION}),
        ),
        (
            "s3",
            json!({"enable_client_credentials": true, "global_credentials": true}),
        ),
        (
            "s4",
            json!({"enable_client_credentials": true, "global_credentials": true, "anonymous": "guest"}),
        ),
    ];
    for (s, config) in plugins {
        n.created(
            &format!("/services/{s}/plugins"),
            json!({"name": "oauth2", "config": config}),
        )
        .await;
    }
    n.created("/consumers", json!({"username": "bob"})).await;
    n.created("/consumers", json!({"username": "guest"})).await;
    let apps = [
        json!({"name": "conf", "client_id": "conf-id", "client_secret": "conf-secret",
               "redirect_uris": ["https://app.test/cb", "https://app.test/other?x=1"]}),
        json!({"name": "pub", "client_id": "pub-id", "client_type": "public",
               "redirect_uris": ["https://app.test/pub"]}),
        json!({"name": "hashed", "client_id": "hash-id", "client_secret": "hash-secret",
               "hash_secret": true, "redirect_uris": ["https://app.test/h"]}),
        json!({"name": "machine", "client_id": "cc-id", "client_secret": "cc-secret"}),
    ];
    for app in apps {
        n.created("/consumers/bob/oauth2", app).await;
    }
    n
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn authorization_code_flow_with_pkce_and_kongs_refusals() {
    let n = node().await;
    let conf = [("client_id", "conf-id")];

    // A code for the first registered URI, with the state; exchanged once for a token with a refresh token.
    let form = [
        ("client_id", "conf-id"),
        ("response_type", "code"),
        ("provision_key", PROVISION),
        ("authenticated_userid", "user-1"),
        ("scope", "email profile"),
        ("state", "xyz"),
    ];
    let (status, headers, body) = n.post("/s1/oauth2/authorize", &form).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(headers["cache-control"], "no-store");
    assert_eq!(headers["pragma"], "no-cache");
    let uri = body["redirect_uri"].as_str().unwrap();
    assert!(uri.starts_with("https://app.test/cb?code="), "{uri}");
    let code = query_of(&body["redirect_uri"])["code"].clone();
    assert_eq!((code.len(), uri.ends_with("&state=xyz")), (32, true));
    let exchange = [
        ("grant_type", "authorization_code"),
        ("client_id", "conf-id"),
        ("client_secret", "conf-secret"),
        ("code", code.as_str()),
    ];
    let (status, headers, token) = n.post("/s1/oauth2/token", &exchange).await;
    assert_eq!(status, 200, "{token}");
    assert_eq!(headers["cache-control"], "no-store");
    assert_eq!(
        (token["token_type"].as_str(), token["expires_in"].as_i64()),
        (Some("bearer"), Some(7200))
    );
    assert_eq!(token["refresh_token"].as_str().map(str::len), Some(32));
    let access = token["access_token"].as_str().unwrap();

    // The token on the proxied route: Kong's consumer, credential and OAuth headers upstream; client-sent
    // copies never pass.
    let (status, _, echo) = n
        .get(
            "/s1/data",
            &[
                ("authorization", &bearer(access)),
                ("x-authenticated-userid", "forged"),
            ],
        )
        .await;
    assert_eq!(status, 200, "{echo}");
    let h = &echo["headers"];
    assert_eq!(h["x-consumer-username"], "bob");
    assert_eq!(h["x-credential-identifier"], "conf-id");
    assert_eq!(h["x-authenticated-scope"], "email profile");
    assert_eq!(h["x-authenticated-userid"], "user-1");
    assert!(h["x-anonymous-consumer"].is_null());
    // `token` scheme, and the access_token parameter, work too.
    assert_eq!(
        n.get("/s1/data", &[("authorization", &format!("token {access}"))])
            .await
            .0,
        200
    );
    assert_eq!(
        n.get(&format!("/s1/data?access_token={access}"), &[])
            .await
            .0,
        200
    );

    // A code is used once; a code of another service's plugin is not valid here.
    let again = n.post("/s1/oauth2/token", &exchange).await;
    assert_eq!(
        (again.0, again.2),
        (400, error("invalid_request", "Invalid code"))
    );
    let code = n.code(&conf).await;
    let mut elsewhere = exchange;
    elsewhere[3] = ("code", code.as_str());
    let (status, _, body) = n.post("/s2/oauth2/token", &elsewhere).await;
    assert_eq!(
        (status, body),
        (400, error("invalid_request", "Invalid code"))
    );

    // Another registered redirect URI keeps its query; a foreign one gets the error at the first URI.
    let (_, _, body) = n
        .post(
            "/s1/oauth2/authorize",
            &[
                ("client_id", "conf-id"),
                ("response_type", "code"),
                ("provision_key", PROVISION),
                ("authenticated_userid", "u"),
                ("scope", "email"),
                ("redirect_uri", "https://app.test/other?x=1"),
            ],
        )
        .await;
    let uri = body["redirect_uri"].as_str().unwrap();
    assert!(
        uri.starts_with("https://app.test/other?code=") && uri.ends_with("&x=1"),
        "{uri}"
    );
    let foreign = [
        ("client_id", "conf-id"),
        ("response_type", "code"),
        ("provision_key", PROVISION),
        ("authenticated_userid", "u"),
        ("scope", "email"),
        ("redirect_uri", "https://evil.test/"),
    ];
    let (status, _, body) = n.post("/s1/oauth2/authorize", &foreign).await;
    assert_eq!(status, 400, "{body}");
    let q = query_of(&body["redirect_uri"]);
    assert!(body["redirect_uri"]
        .as_str()
        .unwrap()
        .starts_with("https://app.test/cb?"));
    assert_eq!(
        (q["error"].as_str(), q["error_description"].as_str()),
        ("invalid_request", WRONG_REDIRECT)
    );
    // The token endpoint checks the redirect URI too.
    let mut bad = exchange.to_vec();
    bad.push(("redirect_uri", "https://evil.test/"));
    let (status, _, body) = n.post("/s1/oauth2/token", &bad).await;
    assert_eq!(
        (status, body),
        (400, error("invalid_request", WRONG_REDIRECT))
    );

    // Kong's refusals at the authorization endpoint, in its order.
    let base = [
        ("client_id", "conf-id"),
        ("response_type", "code"),
        ("scope", "email"),
    ];
    let cases = [
        (
            [("provision_key", "wrong"), ("authenticated_userid", "u")],
            "invalid_provision_key",
            "Invalid provision_key",
        ),
        (
            [("provision_key", PROVISION), ("authenticated_userid", " ")],
            "invalid_authenticated_userid",
            "Missing authenticated_userid parameter",
        ),
    ];
    for (extra, code, description) in cases {
        let mut form = base.to_vec();
        form.extend(extra);
        let (status, _, body) = n.post("/s1/oauth2/authorize", &form).await;
        assert_eq!((status, body), (400, error(code, description)));
    }
    let ok = [("provision_key", PROVISION), ("authenticated_userid", "u")];
    let with = |extra: &[(&'static str, &'static str)]| {
        let mut form = ok.to_vec();
        form.extend_from_slice(extra);
        form
    };
    let (status, _, body) = n
        .post(
            "/s1/oauth2/authorize",
            &with(&[
                ("client_id", "nope"),
                ("response_type", "code"),
                ("scope", "email"),
            ]),
        )
        .await;
    assert_eq!(
        (status, body),
        (
            400,
            error("invalid_client", "Invalid client authentication")
        )
    );
    for (extra, code, description) in [
        (
            vec![("scope", "admin")],
            "invalid_scope",
            "\"admin\" is an invalid scope",
        ),
        (vec![], "invalid_scope", "You must specify a scope"),
        (
            vec![("scope", "email"), ("response_type", "nope")],
            "unsupported_response_type",
            "Invalid response_type",
        ),
    ] {
        let mut form = with(&[("client_id", "conf-id")]);
        if !extra.iter().any(|(k, _)| *k == "response_type") {
            form.push(("response_type", "code"));
        }
        form.extend(extra);
        let (status, _, body) = n.post("/s1/oauth2/authorize", &form).await;
        assert_eq!(status, 400, "{body}");
        let q = query_of(&body["redirect_uri"]);
        assert_eq!(
            (q["error"].as_str(), q["error_description"].as_str()),
            (code, description)
        );
    }

    // Only POST, only HTTPS; a trailing slash is the same endpoint.
    let (status, headers, body) = n.get("/s1/oauth2/token", &[]).await;
    let description = "The HTTP method GET is invalid for the token endpoint";
    assert_eq!((status, body), (405, error("invalid_method", description)));
    assert_eq!(
        headers["www-authenticate"],
        format!("Bearer error=\"invalid_method\", error_description=\"{description}\"").as_str()
    );
    let plain = sluice_testkit::client()
        .post(n.gw.proxy_url("/s1/oauth2/token"))
        .form(&[("grant_type", "client_credentials")])
        .send()
        .await
        .unwrap();
    assert_eq!(plain.status(), 400);
    assert_eq!(
        plain.json::<Value>().await.unwrap(),
        error("access_denied", "You must use HTTPS")
    );
    let form = [
        ("grant_type", "client_credentials"),
        ("client_id", "conf-id"),
        ("client_secret", "conf-secret"),
        ("scope", "email"),
    ];
    assert_eq!(n.post("/s1/oauth2/token/", &form).await.0, 200);

    // PKCE: a public client must send a challenge; S256 only; the verifier is checked at the exchange, and
    // a failed exchange leaves the code usable.
    let public = [("client_id", "pub-id"), ("response_type", "code")];
    let (status, _, body) = n
        .post(
            "/s1/oauth2/authorize",
            &with(&[public[0], public[1], ("scope", "email")]),
        )
        .await;
    assert_eq!(status, 400);
    let q = query_of(&body["redirect_uri"]);
    assert_eq!(
        q["error_description"],
        "code_challenge is required for public clients"
    );
    let (status, _, body) = n
        .post(
            "/s1/oauth2/authorize",
            &with(&[
                public[0],
                public[1],
                ("scope", "email"),
                ("code_challenge", "abc"),
                ("code_challenge_method", "plain"),
            ]),
        )
        .await;
    assert_eq!(status, 400);
    assert_eq!(
        query_of(&body["redirect_uri"])["error_description"],
        "code_challenge_method is not supported, must be S256"
    );
    let verifier = "v".repeat(20) + &"e".repeat(30);
    let challenge = s256(&verifier);
    let code = n
        .code(&[public[0], ("code_challenge", challenge.as_str())])
        .await;
    let swap = |v: Option<&str>, secret: Option<&str>| {
        let mut form = vec![
            ("grant_type", "authorization_code".to_string()),
            ("client_id", "pub-id".into()),
            ("code", code.clone()),
        ];
        form.extend(v.map(|v| ("code_verifier", v.to_string())));
        form.extend(secret.map(|s| ("client_secret", s.to_string())));
        form
    };
    let wrong = "w".repeat(50);
    for (form, expected) in [
        (
            swap(None, None),
            error(
                "invalid_request",
                "code_verifier is required for PKCE authorization requests",
            ),
        ),
        (
            swap(Some("short"), None),
            error(
                "invalid_request",
                "code_verifier must be between 43 and 128 characters",
            ),
        ),
        (
            swap(Some(&wrong), None),
            error("invalid_grant", "Invalid code"),
        ),
        (
            swap(Some(&verifier), Some("s")),
            error(
                "invalid_request",
                "client_secret is disallowed for public clients",
            ),
        ),
    ] {
        let (status, _, body) = n.post("/s1/oauth2/token", &form).await;
        assert_eq!((status, body), (400, expected));
    }
    let (status, _, body) = n
        .post("/s1/oauth2/token", &swap(Some(&verifier), None))
        .await;
    assert_eq!(status, 200, "{body}");
    // A confidential client that sent a challenge must verify it too.
    let code = n
        .code(&[
            conf[0],
            ("code_challenge", challenge.as_str()),
            ("code_challenge_method", "S256"),
        ])
        .await;
    let mut form = exchange.to_vec();
    form[3] = ("code", code.as_str());
    let (status, _, body) = n.post("/s1/oauth2/token", &form).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("invalid_request"))
    );
    form.push(("code_verifier", verifier.as_str()));
    assert_eq!(n.post("/s1/oauth2/token", &form).await.0, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_credentials_password_implicit_refresh_and_expiry() {
    let n = node().await;

    // Client credentials: no refresh token; the secret in a Basic header or the parameters; a hashed one.
    let basic = |id: &str, secret: &str| {
        use base64::Engine;
        format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(format!("{id}:{secret}"))
        )
    };
    let cc = [("grant_type", "client_credentials"), ("scope", "email")];
    let req = n.https.post(n.url("/s1/oauth2/token")).form(&cc);
    let (status, _, body) = n
        .send(req.header("authorization", basic("conf-id", "conf-secret")))
        .await;
    assert_eq!(status, 200, "{body}");
    assert!(
        body["refresh_token"].is_null() && body["expires_in"] == 7200,
        "{body}"
    );
    let req = n.https.post(n.url("/s1/oauth2/token")).form(&cc);
    let (status, headers, body) = n
        .send(req.header("authorization", basic("conf-id", "nope")))
        .await;
    assert_eq!(
        (status, body),
        (
            401,
            error("invalid_client", "Invalid client authentication")
        )
    );
    assert_eq!(headers["www-authenticate"], "Basic realm=\"OAuth2.0\"");
    let wrong = [
        cc[0],
        cc[1],
        ("client_id", "conf-id"),
        ("client_secret", "nope"),
    ];
    let (status, headers, body) = n.post("/s1/oauth2/token", &wrong).await;
    assert_eq!(
        (status, body),
        (
            400,
            error("invalid_client", "Invalid client authentication")
        )
    );
    assert!(headers.get("www-authenticate").is_none());
    n.client_token("/s1", ("hash-id", "hash-secret")).await;
    n.client_token("/s1", ("cc-id", "cc-secret")).await;
    let (status, _, body) = n
        .post(
            "/s1/oauth2/token",
            &[
                cc[0],
                cc[1],
                ("client_id", "hash-id"),
                ("client_secret", "hash-secret!"),
            ],
        )
        .await;
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("invalid_client"))
    );
    let (status, _, body) = n
        .post(
            "/s1/oauth2/token",
            &[
                ("grant_type", "magic"),
                ("client_id", "conf-id"),
                ("client_secret", "conf-secret"),
            ],
        )
        .await;
    assert_eq!(
        (status, body),
        (400, error("unsupported_grant_type", "Invalid grant_type"))
    );

    // Password: the provision key vouches for the user; the token refreshes.
    let password = |key: &'static str| {
        vec![
            ("grant_type", "password"),
            ("client_id", "conf-id"),
            ("client_secret", "conf-secret"),
            ("provision_key", key),
            ("authenticated_userid", "user-9"),
            ("scope", "profile"),
        ]
    };
    let (status, _, body) = n.post("/s1/oauth2/token", &password("wrong")).await;
    assert_eq!(
        (status, body),
        (400, error("invalid_provision_key", "Invalid provision_key"))
    );
    let (status, _, first) = n.post("/s1/oauth2/token", &password(PROVISION)).await;
    assert_eq!(status, 200, "{first}");
    let (access, refresh) = (
        first["access_token"].as_str().unwrap(),
        first["refresh_token"].as_str().unwrap(),
    );
    assert_eq!(
        n.get("/s1/x", &[("authorization", &bearer(access))])
            .await
            .0,
        200
    );
    let refresh_with = |client: &'static str, secret: &'static str, token: &str| {
        vec![
            ("grant_type", "refresh_token".to_string()),
            ("client_id", client.into()),
            ("client_secret", secret.into()),
            ("refresh_token", token.to_string()),
        ]
    };
    let form = refresh_with("hash-id", "hash-secret", refresh);
    let (status, _, body) = n
        .send(n.https.post(n.url("/s1/oauth2/token")).form(&form))
        .await;
    assert_eq!(
        (status, body),
        (
            400,
            error("invalid_client", "Invalid client authentication")
        )
    );
    let form = refresh_with("conf-id", "conf-secret", refresh);
    let (status, _, second) = n
        .send(n.https.post(n.url("/s1/oauth2/token")).form(&form))
        .await;
    assert_eq!(status, 200, "{second}");
    assert_ne!(second["refresh_token"], first["refresh_token"]);
    let (status, _, echo) = n
        .get(
            "/s1/x",
            &[(
                "authorization",
                &bearer(second["access_token"].as_str().unwrap()),
            )],
        )
        .await;
    assert_eq!(
        (status, &echo["headers"]["x-authenticated-userid"]),
        (200, &json!("user-9"))
    );
    assert_eq!(echo["headers"]["x-authenticated-scope"], "profile");
    // The old token and refresh token are gone.
    let (status, headers, body) = n.get("/s1/x", &[("authorization", &bearer(access))]).await;
    assert_eq!((status, body), (401, error("invalid_token", INVALID_TOKEN)));
    assert_eq!(
        headers["www-authenticate"],
        format!("Bearer error=\"invalid_token\", error_description=\"{INVALID_TOKEN}\"").as_str()
    );
    let (status, _, body) = n
        .send(n.https.post(n.url("/s1/oauth2/token")).form(&form))
        .await;
    assert_eq!(
        (status, body),
        (400, error("invalid_request", "Invalid refresh_token"))
    );

    // Implicit grant: the token in the redirect URI's fragment, never a refresh token.
    let implicit = [
        ("client_id", "conf-id"),
        ("response_type", "token"),
        ("provision_key", PROVISION),
        ("authenticated_userid", "user-2"),
        ("scope", "email"),
        ("state", "s t"),
    ];
    let (status, _, body) = n.post("/s1/oauth2/authorize", &implicit).await;
    assert_eq!(status, 200, "{body}");
    let uri = body["redirect_uri"].as_str().unwrap();
    assert!(
        uri.starts_with("https://app.test/cb#access_token="),
        "{uri}"
    );
    let f = query_of(&body["redirect_uri"]);
    assert_eq!(
        (
            f["token_type"].as_str(),
            f["expires_in"].as_str(),
            f["state"].as_str()
        ),
        ("bearer", "7200", "s t")
    );
    assert!(!f.contains_key("refresh_token"));
    let (status, _, echo) = n
        .get("/s1/x", &[("authorization", &bearer(&f["access_token"]))])
        .await;
    assert_eq!(
        (status, &echo["headers"]["x-authenticated-userid"]),
        (200, &json!("user-2"))
    );

    // No token, or another service's: Kong's 401s. s2's realm is in its challenge.
    let (status, headers, body) = n.get("/s1/x", &[]).await;
    assert_eq!(
        (status, body),
        (401, error("invalid_request", "The access token is missing"))
    );
    assert_eq!(headers["www-authenticate"], "Bearer");
    let (status, headers, _) = n.get("/s2/x", &[("authorization", &bearer(access))]).await;
    assert_eq!(status, 401);
    assert_eq!(
        headers["www-authenticate"],
        format!(
            "Bearer realm=\"api\", error=\"invalid_token\", error_description=\"{INVALID_TOKEN}\""
        )
        .as_str()
    );

    // s2: tokens last 2 s; a refresh renews the token in place and keeps its refresh token; the token is
    // hidden from the upstream, in the header or the query.
    let form = [
        ("grant_type", "password"),
        ("client_id", "conf-id"),
        ("client_secret", "conf-secret"),
        ("provision_key", PROVISION),
        ("authenticated_userid", "user-3"),
    ];
    let (status, _, short) = n.post("/s2/oauth2/token", &form).await;
    assert_eq!(
        (status, short["expires_in"].as_i64()),
        (200, Some(2)),
        "{short}"
    );
    let token = short["access_token"].as_str().unwrap().to_string();
    let (status, _, echo) = n.get("/s2/x", &[("authorization", &bearer(&token))]).await;
    assert_eq!(status, 200, "{echo}");
    assert!(echo["headers"]["authorization"].is_null(), "{echo}");
    let (status, _, echo) = n.get(&format!("/s2/x?a=1&access_token={token}"), &[]).await;
    assert_eq!(
        (status, echo["query"].as_str()),
        (200, Some("a=1")),
        "{echo}"
    );
    tokio::time::sleep(std::time::Duration::from_millis(3200)).await;
    let (status, _, body) = n.get("/s2/x", &[("authorization", &bearer(&token))]).await;
    assert_eq!((status, body), (401, error("invalid_token", INVALID_TOKEN)));
    let form = refresh_with(
        "conf-id",
        "conf-secret",
        short["refresh_token"].as_str().unwrap(),
    );
    let (status, _, renewed) = n
        .send(n.https.post(n.url("/s2/oauth2/token")).form(&form))
        .await;
    assert_eq!(status, 200, "{renewed}");
    assert_eq!(renewed["refresh_token"], short["refresh_token"]);
    assert_ne!(renewed["access_token"], short["access_token"]);
    let fresh = renewed["access_token"].as_str().unwrap();
    assert_eq!(
        n.get("/s2/x", &[("authorization", &bearer(fresh))]).await.0,
        200
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn global_credentials_anonymous_and_admin_writes() {
    let n = node().await;

    // Tokens of plugins with global_credentials serve every such plugin, and no other.
    let global = n.client_token("/s3", ("cc-id", "cc-secret")).await;
    let (status, _, echo) = n.get("/s4/x", &[("authorization", &bearer(&global))]).await;
    assert_eq!(
        (status, &echo["headers"]["x-consumer-username"]),
        (200, &json!("bob"))
    );
    let (status, _, body) = n.get("/s1/x", &[("authorization", &bearer(&global))]).await;
    let description = "The access token is global, but the current plugin is configured without 'global_credentials'";
    assert_eq!((status, body), (401, error("invalid_token", description)));
    let scoped = n.client_token("/s1", ("cc-id", "cc-secret")).await;
    assert_eq!(
        n.get("/s3/x", &[("authorization", &bearer(&scoped))])
            .await
            .0,
        401
    );

    // The Admin API's /oauth2_tokens: the live tokens, one by access token or id, and deleting one.
    let (status, list) = n.admin("GET", "/oauth2_tokens", None).await;
    assert_eq!(status, 200, "{list}");
    let listed: Vec<&str> = list["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["access_token"].as_str())
        .collect();
    assert!(
        listed.contains(&global.as_str()) && listed.contains(&scoped.as_str()),
        "{list}"
    );
    let (status, one) = n
        .admin("GET", &format!("/oauth2_tokens/{global}"), None)
        .await;
    assert_eq!(
        (status, &one["service"], &one["token_type"]),
        (200, &Value::Null, &json!("bearer")),
        "{one}"
    );
    let by_id = format!("/oauth2_tokens/{}", one["id"].as_str().unwrap());
    assert_eq!(
        n.admin("GET", &by_id, None).await.1["access_token"],
        json!(global)
    );
    assert_eq!(
        n.get("/s1/x", &[("authorization", &bearer(&scoped))])
            .await
            .0,
        200
    );
    let path = format!("/oauth2_tokens/{scoped}");
    assert_eq!(n.admin("DELETE", &path, None).await.0, 204);
    assert_eq!(n.admin("GET", &path, None).await.0, 404);
    assert_eq!(
        n.get("/s1/x", &[("authorization", &bearer(&scoped))])
            .await
            .0,
        401
    );

    // Another node on the same database serves the same tokens.
    let other = n._db.gateway(BIN, None).start();
    let url = format!("https://{HOST}:{}/s4/x", other.proxy_tls_port());
    let client = https_client(HOST, other.proxy_tls_port(), true);
    let resp = client.get(url).bearer_auth(&global).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    let echo: Value = resp.json().await.unwrap();
    assert_eq!(echo["headers"]["x-consumer-username"], "bob");
    drop(other);

    // anonymous: no token or a bad one leaves the request to the anonymous consumer.
    for headers in [vec![], vec![("authorization", "Bearer nope")]] {
        let (status, _, echo) = n.get("/s4/x", &headers).await;
        assert_eq!(status, 200, "{echo}");
        assert_eq!(echo["headers"]["x-consumer-username"], "guest");
        assert_eq!(echo["headers"]["x-anonymous-consumer"], "true");
    }

    // Admin writes: Kong's checks, generated client ids and secrets, hashed secrets (checked with Python's
    // PBKDF2), the client id as endpoint key, GET /config without codes or tokens.
    let (status, body) = n
        .admin("POST", "/consumers/bob/oauth2", Some(json!({})))
        .await;
    assert_eq!(
        (status, &body["fields"]["name"]),
        (400, &json!("required field missing")),
        "{body}"
    );
    let bad = json!({"name": "x", "redirect_uris": ["not-valid", "https://a.test/#f"]});
    let (status, body) = n.admin("POST", "/consumers/bob/oauth2", Some(bad)).await;
    assert_eq!(status, 400, "{body}");
    let text = body.to_string();
    assert!(
        text.contains("cannot parse 'not-valid'")
            && text.contains("fragment not allowed in 'https://a.test/#f'"),
        "{text}"
    );
    let made = n
        .created("/consumers/bob/oauth2", json!({"name": "gen"}))
        .await;
    assert_eq!(
        (
            made["client_id"].as_str().unwrap().len(),
            made["client_secret"].as_str().unwrap().len()
        ),
        (32, 32)
    );
    assert_eq!(
        (made["client_type"].as_str(), made["hash_secret"].as_bool()),
        (Some("confidential"), Some(false))
    );
    let (status, hashed) = n.admin("GET", "/oauth2/hash-id", None).await;
    assert_eq!(status, 200, "{hashed}");
    let stored = hashed["client_secret"].as_str().unwrap();
    assert!(
        stored.starts_with("$pbkdf2-sha512$i=10000,l=32$"),
        "{stored}"
    );
    let check = Command::new("python3")
        .args(["-c", "import base64,hashlib,sys\n_,alg,p,salt,h=sys.argv[1].split('$')\npad=lambda s: base64.b64decode(s+'='*(-len(s)%4))\nprint(hashlib.pbkdf2_hmac('sha512',sys.argv[2].encode(),pad(salt),10000,32)==pad(h))", stored, "hash-secret"])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&check.stdout).trim(), "True");
    let (status, body) = n.admin("POST", "/oauth2", Some(json!({"name": "dup", "client_id": "conf-id", "consumer": {"id": made["consumer"]["id"]}}))).await;
    assert_eq!(status, 409, "{body}");
    let (status, list) = n.admin("GET", "/consumers/bob/oauth2", None).await;
    assert_eq!(
        (status, list["data"].as_array().map(Vec::len)),
        (200, Some(5))
    );
    let (_, config) = n.admin("GET", "/config", None).await;
    let yaml = config["config"].as_str().unwrap();
    assert!(
        yaml.contains("oauth2_credentials") && yaml.contains("conf-id"),
        "{yaml}"
    );
    assert!(!yaml.contains("oauth2_tokens") && !yaml.contains(&scoped));

    // A secret changes with hash_secret said anew (Kong's rule); the new one is hashed and works.
    let (status, body) = n
        .admin(
            "PATCH",
            "/oauth2/cc-id",
            Some(json!({"client_secret": "new"})),
        )
        .await;
    let all_or_none = "all or none of these fields must be set: 'hash_secret', 'client_secret'";
    assert_eq!(
        (status, &body["fields"]["@entity"]),
        (400, &json!([all_or_none])),
        "{body}"
    );
    let patch = json!({"client_secret": "new-secret", "hash_secret": true});
    let (status, body) = n.admin("PATCH", "/oauth2/cc-id", Some(patch)).await;
    assert_eq!(status, 200, "{body}");
    assert!(body["client_secret"]
        .as_str()
        .unwrap()
        .starts_with("$pbkdf2-sha512$"));
    n.client_token("/s3", ("cc-id", "new-secret")).await;

    // Kong's plugin checks; a generated provision key.
    let (status, body) = n
        .admin(
            "POST",
            "/plugins",
            Some(json!({"name": "oauth2", "config": {}})),
        )
        .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["fields"]["config"], "at least one of these fields must be true: enable_authorization_code, enable_implicit_grant, enable_client_credentials, enable_password_grant");
    let (status, body) = n.admin("POST", "/plugins", Some(json!({"name": "oauth2", "config": {"enable_password_grant": true, "mandatory_scope": true}}))).await;
    let message = "2 schema violations (config.scopes: required field missing; config: failed conditional validation given value of field 'mandatory_scope')";
    assert_eq!((status, &body["message"]), (400, &json!(message)), "{body}");
    let plugin = n
        .created(
            "/routes/s1/plugins",
            json!({"name": "oauth2", "config": {"enable_password_grant": true}}),
        )
        .await;
    assert_eq!(
        plugin["config"]["provision_key"].as_str().map(str::len),
        Some(32),
        "{plugin}"
    );

    // Deleting the consumer deletes its applications, and with them their codes and tokens.
    assert_ne!(n._db.sql("SELECT count(*) FROM oauth2_tokens"), "0");
    assert_eq!(n.admin("DELETE", "/consumers/bob", None).await.0, 204);
    let (status, _, body) = n.get("/s4/x", &[("authorization", &bearer(&global))]).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["headers"]["x-consumer-username"], "guest");
    assert_eq!(
        n.get("/s3/x", &[("authorization", &bearer(&global))])
            .await
            .0,
        401
    );
    let rows = "SELECT (SELECT count(*) FROM oauth2_tokens) + (SELECT count(*) FROM oauth2_authorization_codes)";
    assert_eq!(n._db.sql(rows), "0");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dbless_refuses_the_plugin_with_kongs_message() {
    let gw = Gateway::builder(BIN)
        .config_yaml("_format_version: \"3.0\"\n")
        .start();
    let config = |plugin: bool| {
        let mut c = json!({
            "_format_version": "3.0",
            "services": [{"name": "s", "url": "http://127.0.0.1:9", "routes": [{"name": "r", "paths": ["/r"]}]}],
            "consumers": [{"username": "bob", "oauth2_credentials": [{"name": "app", "client_id": "app-id",
                           "client_secret": "s", "redirect_uris": ["https://app.test/cb"]}]}],
        });
        if plugin {
            c["plugins"] = json!([{"name": "oauth2", "service": "s", "config": {"enable_client_credentials": true}}]);
        }
        c
    };
    let (status, body) = send_json("POST", &gw.admin_url("/config"), Some(config(true))).await;
    assert_eq!(status, 400, "{body}");
    assert!(
        body.to_string()
            .contains("cannot create 'oauth2_tokens' entities when not using a database"),
        "{body}"
    );
    // The credentials themselves are config, as in Kong: accepted and exported.
    let (status, body) = send_json("POST", &gw.admin_url("/config"), Some(config(false))).await;
    assert_eq!(status, 201, "{body}");
    let (_, exported) = send_json("GET", &gw.admin_url("/config"), None).await;
    assert!(
        exported["config"].as_str().unwrap().contains("app-id"),
        "{exported}"
    );
}

/// `accept_http_if_already_terminated`: over plain HTTP, a token request from a peer in `trusted_ips` that
/// says `X-Forwarded-Proto: https` is served; without the header it is refused as plain HTTP.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trusted_proxys_forwarded_https_counts_when_accepted() {
    let db = TestDb::bootstrapped(BIN, "oauth2term");
    let gw = db
        .gateway(BIN, None)
        .env("SLUICE_TRUSTED_IPS", "127.0.0.1")
        .start();
    let up = EchoUpstream::start();
    let admin = |path: &str, body: Value| {
        let url = gw.admin_url(path);
        async move {
            let (status, body) = send_json("POST", &url, Some(body)).await;
            assert_eq!(status, 201, "{body}");
        }
    };
    admin("/services", json!({"name": "s", "url": up.url()})).await;
    admin("/services/s/routes", json!({"name": "r", "paths": ["/s"]})).await;
    admin(
        "/services/s/plugins",
        json!({"name": "oauth2", "config": {"enable_client_credentials": true,
               "accept_http_if_already_terminated": true}}),
    )
    .await;
    admin("/consumers", json!({"username": "bob"})).await;
    admin(
        "/consumers/bob/oauth2",
        json!({"name": "m", "client_id": "m-id", "client_secret": "m-secret"}),
    )
    .await;
    let token = |forwarded: Option<&'static str>| {
        let mut req = sluice_testkit::client()
            .post(gw.proxy_url("/s/oauth2/token"))
            .form(&[
                ("grant_type", "client_credentials"),
                ("client_id", "m-id"),
                ("client_secret", "m-secret"),
            ]);
        if let Some(proto) = forwarded {
            req = req.header("x-forwarded-proto", proto);
        }
        async move {
            let resp = req.send().await.unwrap();
            (resp.status().as_u16(), resp.json::<Value>().await.unwrap())
        }
    };
    let (status, body) = token(Some("https")).await;
    assert_eq!(status, 200, "{body}");
    assert!(body["access_token"].is_string(), "{body}");
    let (status, body) = token(None).await;
    assert_eq!(
        (status, body),
        (400, error("access_denied", "You must use HTTPS"))
    );
}

/// The body is read only where the plugin reads parameters (Kong's `parse_access_token` looks in them only
/// without the auth header): a body larger than the proxy would buffer (8 MB) streams to the upstream
/// behind a bearer header; without one, a large body is read and the token found at its end. (A body over
/// the limit without the header is answered 413 before it is sent whole, which a client may see as a
/// reset connection, so that case is not asked.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_is_read_only_when_the_token_may_be_in_it() {
    let n = node().await;
    let token = n.client_token("/s1", ("cc-id", "cc-secret")).await;
    let big = format!("a={}", "x".repeat(9 << 20));
    let read = format!("a={}&access_token={token}", "x".repeat(6 << 20));
    let form = "application/x-www-form-urlencoded";
    let post = |auth: Option<String>, body: String| {
        let mut req = n.https.post(n.url("/s1/x")).header("content-type", form);
        if let Some(auth) = auth {
            req = req.header("authorization", auth);
        }
        req.body(body)
    };
    let (status, _, _) = n.send(post(Some(bearer(&token)), big.clone())).await;
    assert_eq!(status, 200, "a bearer header: the body streams unread");
    let (status, _, body) = n.send(post(None, read)).await;
    assert_eq!(
        status, 200,
        "no header: the body is read for the token: {body}"
    );
    let (status, _, body) = n.send(post(None, "a=1".into())).await;
    assert_eq!(status, 401, "no token anywhere: {body}");
}
