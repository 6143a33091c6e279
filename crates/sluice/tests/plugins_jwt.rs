//! The jwt plugin and `jwt_secrets` through the real binary. Keys and tokens are made by an independent
//! implementation, Python's PyJWT with `cryptography` (pip packages `pyjwt` and `cryptography`), run with
//! `python3 -c`: every algorithm family (HS, RS, PS, ES, EdDSA), every 401 of Kong's with its body and
//! `WWW-Authenticate`, token places, anonymous, preflight; credentials through the Admin API, `GET /config`
//! and DB mode.

use serde_json::{json, Value};
use sluice_testkit::{client, get_json, send_json, EchoUpstream, Gateway, TestDb};
use std::collections::HashMap;

const BIN: &str = env!("CARGO_BIN_EXE_sluice");

/// Makes fresh keys (two each of RSA 2048, P-256, P-384, P-521 and Ed25519) and signs the requested tokens with PyJWT.
/// A request is `[name, alg, key, claims, headers]`; `key` is a key's name or `secret:<text>`; a claim value
/// `"@<n>"` is now + n seconds. Prints the public keys (SPKI PEM, and `rsa-pkcs1`) and the tokens as JSON.
const PYJWT: &str = r#"
import json, sys, time, warnings, jwt
warnings.simplefilter("ignore")
from cryptography.hazmat.primitives.asymmetric import rsa, ec, ed25519
from cryptography.hazmat.primitives import serialization as s
keys = {
    "rsa": rsa.generate_private_key(public_exponent=65537, key_size=2048),
    "rsa-other": rsa.generate_private_key(public_exponent=65537, key_size=2048),
    "p256": ec.generate_private_key(ec.SECP256R1()),
    "p384": ec.generate_private_key(ec.SECP384R1()),
    "p521": ec.generate_private_key(ec.SECP521R1()),
    "ed25519": ed25519.Ed25519PrivateKey.generate(),
}
for curve, name in [(ec.SECP256R1, "p256"), (ec.SECP384R1, "p384"), (ec.SECP521R1, "p521")]:
    keys[name + "-other"] = ec.generate_private_key(curve())
keys["ed25519-other"] = ed25519.Ed25519PrivateKey.generate()
spki = lambda k: k.public_key().public_bytes(s.Encoding.PEM, s.PublicFormat.SubjectPublicKeyInfo).decode()
out = {"public": {n: spki(k) for n, k in keys.items()}, "tokens": {}}
out["public"]["rsa-pkcs1"] = keys["rsa"].public_key().public_bytes(s.Encoding.PEM, s.PublicFormat.PKCS1).decode()
now = int(time.time())
for name, alg, key, claims, headers in json.loads(sys.argv[1]):
    claims = {c: now + int(v[1:]) if isinstance(v, str) and v.startswith("@") else v for c, v in claims.items()}
    secret = key[7:].encode() if key.startswith("secret:") else keys[key]
    out["tokens"][name] = jwt.encode(claims, secret, algorithm=alg, headers=headers or None)
print(json.dumps(out))
"#;

struct Py {
    public: HashMap<String, String>,
    tokens: HashMap<String, String>,
}

impl Py {
    fn token(&self, name: &str) -> String {
        self.tokens[name].clone()
    }
}

fn pyjwt(requests: Value) -> Py {
    let out = std::process::Command::new("python3")
        .args(["-c", PYJWT, &requests.to_string()])
        .output()
        .expect("python3 (with the pip packages pyjwt and cryptography)");
    assert!(
        out.status.success(),
        "PyJWT failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let map = |v: &Value| -> HashMap<String, String> { serde_json::from_value(v.clone()).unwrap() };
    Py {
        public: map(&v["public"]),
        tokens: map(&v["tokens"]),
    }
}

/// One credential per algorithm (key `k-<alg>`), the key each verifies with, and the token signed by it.
const FAMILIES: &[(&str, &str)] = &[
    ("HS256", "secret:hs-secret"),
    ("HS384", "secret:hs-secret"),
    ("HS512", "secret:hs-secret"),
    ("RS256", "rsa"),
    ("RS384", "rsa"),
    ("RS512", "rsa"),
    ("PS256", "rsa"),
    ("PS384", "rsa"),
    ("PS512", "rsa"),
    ("ES256", "p256"),
    ("ES384", "p384"),
    ("ES512", "p521"),
    ("EdDSA", "ed25519"),
];

/// Another key of the same type, for forged signatures.
fn other_key(key: &str) -> String {
    match key.strip_prefix("secret:") {
        Some(_) => "secret:not-the-secret".into(),
        None => format!("{key}-other"),
    }
}

fn secrets(py: &Py) -> Vec<Value> {
    FAMILIES
        .iter()
        .map(|(alg, key)| {
            let mut c = json!({"key": format!("k-{alg}"), "algorithm": alg});
            match key.strip_prefix("secret:") {
                Some(secret) => c["secret"] = json!(secret),
                // RS512's key is given in the PKCS#1 form, the others as SubjectPublicKeyInfo.
                None if *alg == "RS512" => c["rsa_public_key"] = json!(py.public["rsa-pkcs1"]),
                None => c["rsa_public_key"] = json!(py.public[*key]),
            }
            c
        })
        .collect()
}

fn route(name: &str, config: Value) -> Value {
    json!({"name": name, "paths": [format!("/{name}")], "plugins": [{"name": "jwt", "config": config}]})
}

fn gateway(up: &EchoUpstream, py: &Py) -> Gateway {
    let mut alice_secrets = secrets(py);
    alice_secrets.push(json!({"key": "b64", "secret": "czNjcmV0Pw"})); // base64url of "s3cret?"
    alice_secrets.push(json!({"key": "es-nokey", "algorithm": "ES256"}));
    let config = json!({
        "_format_version": "3.0",
        "consumers": [
            {"username": "alice", "custom_id": "A1", "jwt_secrets": alice_secrets},
            {"username": "guest"},
        ],
        "services": [{"name": "s", "url": up.url(), "routes": [
            route("jwt", json!({})),
            route("strict", json!({"claims_to_verify": ["exp", "nbf"], "maximum_expiration": 3600})),
            route("places", json!({"uri_param_names": ["token"], "cookie_names": ["jwt_cookie"],
                                    "header_names": ["x-jwt"], "realm": "r"})),
            route("anon", json!({"anonymous": "guest"})),
            route("preflight", json!({"run_on_preflight": false})),
            route("b64", json!({"secret_is_base64": true})),
            route("kid", json!({"key_claim_name": "kid"})),
        ]}],
    });
    Gateway::builder(BIN)
        .config_yaml(&config.to_string())
        .start()
}

async fn get(gw: &Gateway, path: &str, headers: &[(&str, &str)]) -> (u16, String, Value) {
    let (status, h, body) = get_json(&gw.proxy_url(path), headers).await;
    let challenge = h
        .get("www-authenticate")
        .map_or("", |v| v.to_str().unwrap())
        .to_string();
    (status, challenge, body)
}

async fn call(gw: &Gateway, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
    send_json(method, &gw.admin_url(path), body).await
}

fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_algorithm_family_verifies_pyjwt_tokens() {
    let mut requests = Vec::new();
    for (alg, key) in FAMILIES {
        let iss = json!({"iss": format!("k-{alg}")});
        requests.push(json!([alg, alg, key, iss, null]));
        requests.push(json!([
            format!("{alg}-forged"),
            alg,
            other_key(key),
            iss,
            null
        ]));
    }
    let py = pyjwt(Value::Array(requests));
    let up = EchoUpstream::start();
    let gw = gateway(&up, &py);
    for (alg, _) in FAMILIES {
        let token = bearer(&py.token(alg));
        let (status, _, echo) = get(&gw, "/jwt", &[("authorization", &token)]).await;
        assert_eq!(status, 200, "{alg}: {echo}");
        let h = &echo["headers"];
        assert_eq!(h["x-consumer-username"], "alice", "{alg}");
        assert_eq!(h["x-consumer-custom-id"], "A1");
        assert_eq!(h["x-credential-identifier"], format!("k-{alg}"));
        assert!(h["x-consumer-id"].is_string() && h.get("x-anonymous-consumer").is_none());

        let forged = bearer(&py.token(&format!("{alg}-forged")));
        let (status, challenge, body) = get(&gw, "/jwt", &[("authorization", &forged)]).await;
        assert_eq!(
            (status, &body),
            (401, &json!({"message": "Invalid signature"})),
            "{alg}"
        );
        assert_eq!(challenge, "Bearer error=\"invalid_token\"");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kongs_401s_token_places_anonymous_and_preflight() {
    let hs = "secret:hs-secret";
    let py = pyjwt(json!([
        ["ok", "HS256", hs, {"iss": "k-HS256"}, null],
        ["other", "HS256", hs, {"iss": "k-HS256", "sub": "x"}, null],
        ["no-iss", "HS256", hs, {"sub": "x"}, null],
        ["empty-iss", "HS256", hs, {"iss": ""}, null],
        ["unknown-iss", "HS256", hs, {"iss": "nobody"}, null],
        ["wrong-alg", "HS384", hs, {"iss": "k-HS256"}, null],
        ["fresh", "HS256", hs, {"iss": "k-HS256", "exp": "@600", "nbf": "@-10"}, null],
        ["expired", "HS256", hs, {"iss": "k-HS256", "exp": "@-10", "nbf": "@-10"}, null],
        ["early", "HS256", hs, {"iss": "k-HS256", "exp": "@600", "nbf": "@600"}, null],
        ["both", "HS256", hs, {"iss": "k-HS256", "exp": "@-10", "nbf": "@600"}, null],
        ["too-long", "HS256", hs, {"iss": "k-HS256", "exp": "@7200", "nbf": "@-10"}, null],
        ["text-exp", "HS256", hs, {"iss": "k-HS256", "exp": "soon", "nbf": "@-10"}, null],
        ["b64", "HS256", "secret:s3cret?", {"iss": "b64"}, null],
        ["kid", "HS256", hs, {"sub": "x"}, {"kid": "k-HS256"}],
        ["es-nokey", "ES256", "p256", {"iss": "es-nokey"}, null],
    ]));
    let up = EchoUpstream::start();
    let gw = gateway(&up, &py);
    let auth = |name: &str| bearer(&py.token(name));
    let invalid = "Bearer error=\"invalid_token\"";
    let message = |m: &str| json!({ "message": m });

    // No token; unreadable ones; Kong's message per failed check, in Kong's order.
    assert_eq!(
        get(&gw, "/jwt", &[]).await,
        (401, "Bearer".into(), message("Unauthorized"))
    );
    for (header, expected) in [
        ("Bearer abc".to_string(), "Bad token; invalid JSON"),
        (bearer("eyJhbGciOiJub25lIn0.e30."), "Bad token; invalid alg"),
        (auth("no-iss"), "No mandatory 'iss' in claims"),
        (auth("empty-iss"), "Invalid 'iss' in claims"),
        (auth("unknown-iss"), "No credentials found for given 'iss'"),
        (auth("wrong-alg"), "Invalid algorithm"),
        (auth("es-nokey"), "Invalid key/secret"),
        (format!("{}x", auth("ok")), "Invalid signature"),
        (auth("b64"), "Invalid signature"),
    ] {
        let got = get(&gw, "/jwt", &[("authorization", &header)]).await;
        assert_eq!(got, (401, invalid.into(), message(expected)), "{header}");
    }

    // Registered claims and maximum_expiration answer with Kong's error tables.
    let strict = |name: &'static str| {
        let gw = &gw;
        let header = auth(name);
        async move { get(gw, "/strict", &[("authorization", &header)]).await }
    };
    assert_eq!(strict("fresh").await.0, 200);
    for (name, body) in [
        (
            "ok",
            json!({"exp": "must be a number", "nbf": "must be a number"}),
        ),
        ("expired", json!({"exp": "token expired"})),
        ("early", json!({"nbf": "token not valid yet"})),
        (
            "both",
            json!({"exp": "token expired", "nbf": "token not valid yet"}),
        ),
        (
            "too-long",
            json!({"exp": "exceeds maximum allowed expiration"}),
        ),
        ("text-exp", json!({"exp": "must be a number"})),
    ] {
        assert_eq!(strict(name).await, (401, invalid.into(), body), "{name}");
    }

    // Where tokens are found: the query, then cookies, then Bearer headers; distinct ones are too many.
    let ok = py.token("ok");
    assert_eq!(get(&gw, &format!("/jwt?jwt={ok}"), &[]).await.0, 200);
    let same = get(
        &gw,
        &format!("/jwt?jwt={ok}"),
        &[("authorization", &auth("ok"))],
    )
    .await;
    assert_eq!(same.0, 200, "the same token twice is one token");
    let two = get(
        &gw,
        &format!("/jwt?jwt={}", py.token("other")),
        &[("authorization", &auth("ok"))],
    )
    .await;
    assert_eq!(
        two,
        (401, invalid.into(), message("Multiple tokens provided"))
    );
    let flag = get(&gw, "/jwt?jwt", &[]).await;
    assert_eq!(flag, (401, invalid.into(), message("Unrecognizable token")));
    assert_eq!(get(&gw, &format!("/places?token={ok}"), &[]).await.0, 200);
    let cookie = format!("a=1; jwt_cookie={ok}");
    assert_eq!(get(&gw, "/places", &[("cookie", &cookie)]).await.0, 200);
    assert_eq!(get(&gw, "/places", &[("x-jwt", &auth("ok"))]).await.0, 200);
    let (status, challenge, _) = get(
        &gw,
        &format!("/places?jwt={ok}"),
        &[("authorization", &auth("ok"))],
    )
    .await;
    assert_eq!(
        (status, challenge.as_str()),
        (401, "Bearer realm=\"r\""),
        "other places are not read"
    );
    let bad = get(&gw, "/places", &[("x-jwt", "Bearer abc")]).await;
    assert_eq!(bad.1, "Bearer realm=\"r\" error=\"invalid_token\"");

    // secret_is_base64, key_claim_name from the token's header.
    assert_eq!(
        get(&gw, "/b64", &[("authorization", &auth("b64"))]).await.0,
        200
    );
    let (status, _, echo) = get(&gw, "/kid", &[("authorization", &auth("kid"))]).await;
    assert_eq!(
        (status, &echo["headers"]["x-credential-identifier"]),
        (200, &json!("k-HS256"))
    );

    // anonymous: any failure proxies as the guest; forged consumer headers never reach the upstream.
    for header in ["", "Bearer abc"] {
        let (status, _, echo) = get(
            &gw,
            "/anon",
            &[("authorization", header), ("x-consumer-username", "forged")],
        )
        .await;
        assert_eq!(status, 200);
        assert_eq!(echo["headers"]["x-consumer-username"], "guest");
        assert_eq!(echo["headers"]["x-anonymous-consumer"], "true");
        assert!(echo["headers"].get("x-credential-identifier").is_none());
    }

    // run_on_preflight: false lets OPTIONS through unauthenticated.
    let options = |path: &str| {
        client()
            .request(reqwest::Method::OPTIONS, gw.proxy_url(path))
            .send()
    };
    assert_eq!(options("/preflight").await.unwrap().status(), 200);
    assert_eq!(options("/jwt").await.unwrap().status(), 401);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn credentials_round_trip_through_the_admin_api_and_get_config() {
    let py = pyjwt(json!([["ok", "RS256", "rsa", {"iss": "k-RS256"}, null]]));
    let up = EchoUpstream::start();
    let gw = gateway(&up, &py);

    let (status, list) = call(&gw, "GET", "/jwts?size=100", None).await;
    assert_eq!(status, 200, "{list}");
    assert_eq!(list["data"].as_array().unwrap().len(), FAMILIES.len() + 2);
    let (status, nested) = call(&gw, "GET", "/consumers/alice/jwt?size=100", None).await;
    assert_eq!(
        (status, nested["data"].as_array().unwrap().len()),
        (200, FAMILIES.len() + 2)
    );
    let (status, one) = call(&gw, "GET", "/jwts/k-RS256", None).await;
    assert_eq!(status, 200, "{one}");
    assert_eq!(one["algorithm"], "RS256");
    assert_eq!(one["rsa_public_key"], json!(py.public["rsa"]));
    assert!(one["consumer"]["id"].is_string() && one["secret"].as_str().unwrap().len() == 32);
    let (status, by_consumer) = call(&gw, "GET", "/consumers/alice/jwt/k-HS256", None).await;
    assert_eq!((status, &by_consumer["secret"]), (200, &json!("hs-secret")));

    // The export carries every credential whole; loading it back keeps the tokens valid.
    let (status, export) = call(&gw, "GET", "/config", None).await;
    assert_eq!(status, 200);
    let text = export["config"].as_str().unwrap().to_string();
    assert!(
        text.contains("jwt_secrets:") && text.contains("k-EdDSA") && text.contains("hs-secret")
    );
    let resp = client()
        .post(gw.admin_url("/config"))
        .header("content-type", "application/x-yaml")
        .body(text)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 201, "{}", resp.text().await.unwrap());
    let auth = bearer(&py.token("ok"));
    assert_eq!(get(&gw, "/jwt", &[("authorization", &auth)]).await.0, 200);

    // Kong's schema checks on a load: an RS credential needs a public key that parses.
    let bad = json!({"_format_version": "3.0", "consumers": [{"username": "u", "jwt_secrets": [
        {"key": "a", "algorithm": "RS256"}, {"key": "b", "algorithm": "PS256", "rsa_public_key": "nope"},
        {"key": "c", "algorithm": "HS999"}]}]});
    let (status, body) = send_json(
        "POST",
        &gw.admin_url("/config"),
        Some(json!({"config": bad.to_string()})),
    )
    .await;
    assert_eq!(status, 400, "{body}");
    let text = body.to_string();
    for expected in [
        "required field missing",
        "invalid key",
        "failed conditional validation given value of field 'algorithm'",
        "expected one of: HS256",
    ] {
        assert!(text.contains(expected), "{expected} in {text}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn db_mode_creates_credentials_through_the_admin_api() {
    let db = TestDb::bootstrapped(BIN, "jwt");
    let gw = db.gateway(BIN, None).start();
    let up = EchoUpstream::start();
    let (status, carol) = call(
        &gw,
        "POST",
        "/consumers",
        Some(json!({"username": "carol"})),
    )
    .await;
    assert_eq!(status, 201, "{carol}");
    let (status, svc) = call(
        &gw,
        "POST",
        "/services",
        Some(json!({"name": "s", "url": up.url()})),
    )
    .await;
    assert_eq!(status, 201, "{svc}");
    let route = json!({"name": "r", "paths": ["/jwt"]});
    assert_eq!(
        call(&gw, "POST", "/services/s/routes", Some(route)).await.0,
        201
    );
    let plugin = json!({"name": "jwt", "config": {"claims_to_verify": ["exp"]}});
    let (status, body) = call(&gw, "POST", "/routes/r/plugins", Some(plugin)).await;
    assert_eq!(status, 201, "{body}");

    // Kong's checks and messages on writes.
    let (status, body) = call(
        &gw,
        "POST",
        "/consumers/carol/jwt",
        Some(json!({"algorithm": "EdDSA"})),
    )
    .await;
    assert_eq!(
        (status, &body["fields"]["rsa_public_key"]),
        (400, &json!("required field missing")),
        "{body}"
    );
    let max =
        json!({"name": "jwt", "config": {"maximum_expiration": 60, "claims_to_verify": ["nbf"]}});
    let (status, body) = call(&gw, "POST", "/plugins", Some(max)).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(
        body["fields"]["config"]["claims_to_verify"],
        "expected to contain: exp"
    );

    // A generated key and secret (HS256), and an ES512 key given as PEM.
    let (status, hs) = call(&gw, "POST", "/consumers/carol/jwt", Some(json!({}))).await;
    assert_eq!(status, 201, "{hs}");
    assert_eq!(
        (hs["algorithm"].as_str(), hs["key"].as_str().unwrap().len()),
        (Some("HS256"), 32)
    );
    let (key, secret) = (hs["key"].as_str().unwrap(), hs["secret"].as_str().unwrap());
    let py = pyjwt(json!([
        ["hs", "HS256", format!("secret:{secret}"), {"iss": key, "exp": "@60"}, null],
        ["es", "ES512", "p521", {"iss": "carol-es", "exp": "@60"}, null],
        ["expired", "ES512", "p521", {"iss": "carol-es", "exp": "@-1"}, null],
    ]));
    let es = json!({"key": "carol-es", "algorithm": "ES512", "rsa_public_key": py.public["p521"],
                    "consumer": {"id": carol["id"]}});
    let (status, body) = call(&gw, "POST", "/jwts", Some(es)).await;
    assert_eq!(status, 201, "{body}");
    let again = json!({"key": "carol-es"});
    let (status, body) = call(&gw, "POST", "/consumers/carol/jwt", Some(again)).await;
    assert_eq!(status, 409, "{body}");
    let unique = r#"UNIQUE violation detected on '{key="carol-es"}'"#;
    assert_eq!(body["message"], unique);
    let (status, listed) = call(&gw, "GET", "/consumers/carol/jwt", None).await;
    assert_eq!((status, listed["data"].as_array().unwrap().len()), (200, 2));

    for name in ["hs", "es"] {
        let (status, _, echo) =
            get(&gw, "/jwt", &[("authorization", &bearer(&py.token(name)))]).await;
        assert_eq!(status, 200, "{name}: {echo}");
        assert_eq!(echo["headers"]["x-consumer-username"], "carol");
    }
    let expired = get(
        &gw,
        "/jwt",
        &[("authorization", &bearer(&py.token("expired")))],
    )
    .await;
    assert_eq!(
        (expired.0, expired.2),
        (401, json!({"exp": "token expired"}))
    );

    // Deleting the consumer takes its credentials with it (Kong's cascade).
    assert_eq!(call(&gw, "DELETE", "/consumers/carol", None).await.0, 204);
    assert_eq!(call(&gw, "GET", "/jwts/carol-es", None).await.0, 404);
    let gone = get(&gw, "/jwt", &[("authorization", &bearer(&py.token("es")))]).await;
    assert_eq!(
        gone.2,
        json!({"message": "No credentials found for given 'iss'"})
    );
}
