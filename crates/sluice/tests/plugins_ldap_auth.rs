//! The ldap-auth plugin through the real binary against a real OpenLDAP server (Debian's `slapd`, started
//! by the test with its own database: `plugins_ldap_auth/slapd.rs`): good and bad passwords, unknown users,
//! Kong's 401 bodies and `WWW-Authenticate` values, `Proxy-Authorization`, `header_type`, `hide_credentials`,
//! `anonymous`, the verdict cache (a changed password, a stopped server), Kong's 500 when the server is
//! down or silent (without holding up the worker), StartTLS and LDAPS.

#[path = "plugins_ldap_auth/slapd.rs"]
mod slapd;

use base64::Engine;
use serde_json::{json, Value};
use slapd::{Slapd, BASE_DN};
use sluice_testkit::{closed_port, get_json, send_json, EchoUpstream, Gateway, SilentServer};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_sluice");

fn ldap(port: u16, extra: Value) -> Value {
    let mut config = json!({"ldap_host": "127.0.0.1", "ldap_port": port, "base_dn": BASE_DN, "attribute": "uid"});
    config
        .as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    config
}

fn route(name: &str, config: Value) -> Value {
    json!({"name": name, "paths": [format!("/{name}")], "plugins": [{"name": "ldap-auth", "config": config}]})
}

/// A gateway with one worker (so the per-worker verdict cache is the only one) and these routes.
fn gateway(up: &EchoUpstream, routes: Vec<Value>) -> Gateway {
    let config = json!({
        "_format_version": "3.0",
        "consumers": [{"username": "guest", "custom_id": "G"}],
        "services": [{"name": "s", "url": up.url(), "routes": routes}],
    });
    Gateway::builder(BIN)
        .workers(1)
        .config_yaml(&config.to_string())
        .start()
}

fn creds(scheme: &str, text: &str) -> String {
    format!(
        "{scheme} {}",
        base64::engine::general_purpose::STANDARD.encode(text)
    )
}

/// Status, `WWW-Authenticate` and body (the echo of the upstream request when proxied).
async fn get(gw: &Gateway, path: &str, headers: &[(&str, &str)]) -> (u16, String, Value) {
    let (status, h, body) = get_json(&gw.proxy_url(path), headers).await;
    let challenge = h
        .get("www-authenticate")
        .map_or("", |v| v.to_str().unwrap())
        .to_string();
    (status, challenge, body)
}

fn unauthorized() -> Value {
    json!({"message": "Unauthorized"})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn binds_against_openldap_with_kongs_answers() {
    let server = Slapd::start();
    let up = EchoUpstream::start();
    let p = server.port;
    let gw = gateway(
        &up,
        vec![
            route("ldap", ldap(p, json!({}))),
            route(
                "hide",
                ldap(p, json!({"hide_credentials": true, "realm": "test-ldap"})),
            ),
            route(
                "custom",
                ldap(p, json!({"header_type": "Basic", "realm": "r"})),
            ),
            route("anon", ldap(p, json!({"anonymous": "guest"}))),
            route("anon-missing", ldap(p, json!({"anonymous": "nobody-here"}))),
            route("by-name", ldap(p, json!({"ldap_host": "localhost"}))),
        ],
    );
    let good = creds("ldap", "einstein:password");

    // A good password: proxied with the LDAP user as the credential; client-sent consumer headers are gone.
    let (status, _, echo) = get(
        &gw,
        "/ldap",
        &[("authorization", &good), ("x-consumer-id", "forged")],
    )
    .await;
    assert_eq!(status, 200, "{echo}");
    let h = &echo["headers"];
    assert_eq!(h["x-credential-identifier"], "einstein");
    assert_eq!(
        h["authorization"],
        good.as_str(),
        "kept without hide_credentials"
    );
    for absent in [
        "x-consumer-id",
        "x-consumer-username",
        "x-anonymous-consumer",
    ] {
        assert!(h.get(absent).is_none(), "{absent}: {h}");
    }
    // A host name is resolved without blocking the worker (tokio's resolver pool).
    let (status, _, echo) = get(&gw, "/by-name", &[("authorization", &good)]).await;
    assert_eq!(
        (status, &echo["headers"]["x-credential-identifier"]),
        (200, &json!("einstein"))
    );
    // Another user, the scheme in capitals after spaces, and Proxy-Authorization.
    let curie = creds("LDAP", "curie:radium");
    let (status, _, echo) = get(&gw, "/ldap", &[("authorization", &format!("  {curie}"))]).await;
    assert_eq!(
        (status, &echo["headers"]["x-credential-identifier"]),
        (200, &json!("curie"))
    );
    let (status, _, _) = get(&gw, "/ldap", &[("proxy-authorization", &good)]).await;
    assert_eq!(status, 200);
    // A refused Proxy-Authorization, then a good Authorization: Kong tries both.
    let bad = creds("ldap", "einstein:wrong");
    let both = [
        ("proxy-authorization", bad.as_str()),
        ("authorization", good.as_str()),
    ];
    let (status, _, echo) = get(&gw, "/ldap", &both).await;
    assert_eq!(
        (status, &echo["headers"]["x-credential-identifier"]),
        (200, &json!("einstein"))
    );

    // Kong's 401s: bad password, unknown user, no header, malformed values, another scheme, no password.
    let very_long = format!("einstein:{}", "e0d91f53c566".repeat(20));
    for value in [
        Some(bad.clone()),
        Some(creds("ldap", "nobody:password")),
        None,
        Some("abcd".to_string()),
        Some("ldap ".to_string()),
        Some(creds("invalidldap", "einstein:password")),
        Some(creds("ldap", "einstein:")),
        Some(creds("ldap", "einstein:password:another")),
        Some(creds("ldap", &very_long)),
    ] {
        let headers: Vec<(&str, &str)> = value
            .iter()
            .map(|v| ("authorization", v.as_str()))
            .collect();
        let (status, challenge, body) = get(&gw, "/ldap", &headers).await;
        assert_eq!(
            (status, challenge.as_str(), &body),
            (401, "LDAP", &unauthorized()),
            "{value:?}"
        );
    }
    let (status, challenge, _) = get(&gw, "/ldap", &[("proxy-authorization", "abcd")]).await;
    assert_eq!((status, challenge.as_str()), (401, "LDAP"));

    // hide_credentials and the realm.
    let (status, _, echo) = get(
        &gw,
        "/hide",
        &[("authorization", &good), ("proxy-authorization", "x")],
    )
    .await;
    assert_eq!(status, 200);
    assert!(
        echo["headers"].get("authorization").is_none()
            && echo["headers"].get("proxy-authorization").is_none()
    );
    let (status, challenge, _) = get(&gw, "/hide", &[("authorization", &bad)]).await;
    assert_eq!(
        (status, challenge.as_str()),
        (401, "LDAP realm=\"test-ldap\"")
    );

    // header_type: its scheme is expected (any case) and named as is in the challenge.
    let (status, _, _) = get(
        &gw,
        "/custom",
        &[("authorization", &creds("basic", "einstein:password"))],
    )
    .await;
    assert_eq!(status, 200);
    let (status, challenge, body) = get(&gw, "/custom", &[("authorization", &good)]).await;
    assert_eq!(
        (status, challenge.as_str(), &body),
        (401, "Basic realm=\"r\"", &unauthorized())
    );

    // anonymous: a failure proxies as the anonymous consumer; a success as the LDAP user.
    for headers in [vec![], vec![("authorization", bad.as_str())]] {
        let (status, _, echo) = get(&gw, "/anon", &headers).await;
        assert_eq!(status, 200);
        let h = &echo["headers"];
        assert_eq!(
            (&h["x-anonymous-consumer"], &h["x-consumer-username"]),
            (&json!("true"), &json!("guest"))
        );
        assert_eq!(h["x-consumer-custom-id"], "G");
        assert!(h.get("x-credential-identifier").is_none());
    }
    let (status, _, echo) = get(&gw, "/anon", &[("authorization", &good)]).await;
    assert_eq!(status, 200);
    assert_eq!(echo["headers"]["x-credential-identifier"], "einstein");
    assert!(echo["headers"].get("x-anonymous-consumer").is_none());

    // An `anonymous` naming no consumer: a 500 (the auth plugins' shared rule; see docs/differences.md).
    let (status, _, body) = get(&gw, "/anon-missing", &[]).await;
    assert_eq!(
        (status, body),
        (500, json!({"message": "An unexpected error occurred"}))
    );

    // Kong's entity check, through the Admin API: the config is refused and the live one stays.
    let both = ldap(p, json!({"ldaps": true, "start_tls": true}));
    let refused = json!({"_format_version": "3.0", "services": [{"name": "s", "url": up.url(),
        "routes": [route("both", both)]}]});
    let (status, body) = send_json("POST", &gw.admin_url("/config"), Some(refused)).await;
    assert_eq!(status, 400, "{body}");
    let text = body.to_string();
    assert!(
        text.contains("'ldaps' and 'start_tls' cannot be enabled simultaneously"),
        "{text}"
    );
    assert_eq!(get(&gw, "/ldap", &[("authorization", &good)]).await.0, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verdicts_are_cached_per_password_for_cache_ttl() {
    let mut server = Slapd::start();
    let up = EchoUpstream::start();
    let gw = gateway(
        &up,
        vec![route("ldap", ldap(server.port, json!({"cache_ttl": 3})))],
    );
    let old = creds("ldap", "einstein:password");
    let new = creds("ldap", "einstein:relativity");
    let status = |v: &str| {
        let v = v.to_string();
        let gw = &gw;
        async move { get(gw, "/ldap", &[("authorization", &v)]).await.0 }
    };
    assert_eq!(status(&old).await, 200);
    assert_eq!(
        status(&new).await,
        401,
        "a cached success does not cover another password"
    );
    let changed = Instant::now();
    server.set_password("einstein", "relativity");
    // The old password's success and the new one's refusal are cached until cache_ttl has passed.
    assert_eq!(status(&old).await, 200);
    assert_eq!(status(&new).await, 401);
    tokio::time::sleep(
        Duration::from_secs(3).saturating_sub(changed.elapsed()) + Duration::from_millis(500),
    )
    .await;
    assert_eq!(
        status(&old).await,
        401,
        "the old password, asked again after cache_ttl"
    );
    assert_eq!(status(&new).await, 200);
    // With the server gone: cached verdicts still answer; anything else is Kong's 500.
    server.kill();
    assert_eq!(status(&new).await, 200);
    assert_eq!(status(&old).await, 401);
    let (code, _, body) = get(
        &gw,
        "/ldap",
        &[("authorization", &creds("ldap", "curie:radium"))],
    )
    .await;
    assert_eq!(
        (code, body),
        (500, json!({"message": "An unexpected error occurred"}))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_down_or_silent_is_kongs_500_without_blocking_the_worker() {
    let up = EchoUpstream::start();
    let silent = SilentServer::start();
    let down = closed_port();
    let gw = gateway(
        &up,
        vec![
            route("down", ldap(down, json!({}))),
            route("down-anon", ldap(down, json!({"anonymous": "guest"}))),
            route("silent", ldap(silent.port(), json!({"timeout": 2000}))),
            json!({"name": "open", "paths": ["/open"]}),
        ],
    );
    let good = creds("ldap", "einstein:password");
    let error = json!({"message": "An unexpected error occurred"});
    for path in ["/down", "/down-anon"] {
        let (status, _, body) = get(&gw, path, &[("authorization", &good)]).await;
        assert_eq!((status, &body), (500, &error), "{path}");
    }
    // No header at all never reaches the server.
    assert_eq!(get(&gw, "/down", &[]).await.0, 401);

    // One worker: while it waits for a server that never answers, it still serves other requests.
    let started = Instant::now();
    let waiting = tokio::spawn({
        let url = gw.proxy_url("/silent");
        let good = good.clone();
        async move { get_json(&url, &[("authorization", &good)]).await }
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let t = Instant::now();
    assert_eq!(get(&gw, "/open", &[]).await.0, 200);
    assert!(
        t.elapsed() < Duration::from_millis(1000),
        "served in {:?}",
        t.elapsed()
    );
    let (status, _, body) = waiting.await.unwrap();
    assert_eq!((status, &body), (500, &error));
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(1900) && took < Duration::from_secs(10),
        "timeout: {took:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn start_tls_and_ldaps() {
    let server = Slapd::start_requiring_tls();
    let up = EchoUpstream::start();
    let gw = gateway(
        &up,
        vec![
            route("starttls", ldap(server.port, json!({"start_tls": true}))),
            // The server refuses simple binds without TLS (result 13): Kong's 401 (another `cache_ttl`:
            // Kong's cache key does not hold `start_tls`, so `/starttls`'s verdicts would answer).
            route("plain", ldap(server.port, json!({"cache_ttl": 62}))),
            route("ldaps", ldap(server.tls_port, json!({"ldaps": true}))),
            // The server's certificate is self-signed: verification fails the handshake, a 401 in Kong.
            route(
                "verified",
                ldap(
                    server.tls_port,
                    json!({"ldaps": true, "verify_ldap_host": true}),
                ),
            ),
            // Plain LDAP spoken to the TLS port: the server hangs up, Kong's 500 (another `cache_ttl`, so
            // the verdicts above, under the same host and port, are not this route's).
            route(
                "plain-to-tls",
                ldap(server.tls_port, json!({"timeout": 3000, "cache_ttl": 61})),
            ),
        ],
    );
    let good = creds("ldap", "einstein:password");
    let bad = creds("ldap", "einstein:nope");
    for path in ["/starttls", "/ldaps"] {
        let (status, _, echo) = get(&gw, path, &[("authorization", &good)]).await;
        assert_eq!(
            (status, &echo["headers"]["x-credential-identifier"]),
            (200, &json!("einstein")),
            "{path}"
        );
        let (status, challenge, _) = get(&gw, path, &[("authorization", &bad)]).await;
        assert_eq!((status, challenge.as_str()), (401, "LDAP"), "{path}");
    }
    // Another user: Kong's cache key does not hold `ldaps` or `verify_ldap_host`, so einstein's verdict from
    // `/ldaps` would answer.
    let curie = creds("ldap", "curie:radium");
    let (status, challenge, body) = get(&gw, "/plain", &[("authorization", &good)]).await;
    assert_eq!(
        (status, challenge.as_str(), body),
        (401, "LDAP", unauthorized())
    );
    let (status, _, body) = get(&gw, "/verified", &[("authorization", &curie)]).await;
    assert_eq!((status, body), (401, unauthorized()));
    assert_eq!(
        get(&gw, "/plain-to-tls", &[("authorization", &good)])
            .await
            .0,
        500
    );
}

/// Beside key-auth (priority 1250, so it runs first), as Kong's spec: without `anonymous` both must pass
/// (logical AND; ldap-auth then leaves the request without a consumer, as Kong's does); with `anonymous` on
/// both either may (logical OR), and ldap-auth does nothing once key-auth found a consumer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_key_auth_logical_and_or() {
    let server = Slapd::start();
    let up = EchoUpstream::start();
    let with_key_auth = |name: &str, extra: Value| {
        let key_auth = json!({"name": "key-auth", "config": extra.clone()});
        let ldap_auth = json!({"name": "ldap-auth", "config": ldap(server.port, extra)});
        json!({"name": name, "paths": [format!("/{name}")], "plugins": [ldap_auth, key_auth]})
    };
    let config = json!({
        "_format_version": "3.0",
        "consumers": [
            {"username": "guest"},
            {"username": "mickey", "keyauth_credentials": [{"key": "Mouse"}]},
        ],
        "services": [{"name": "s", "url": up.url(), "routes": [
            with_key_auth("and", json!({})),
            with_key_auth("or", json!({"anonymous": "guest"})),
        ]}],
    });
    let gw = Gateway::builder(BIN)
        .workers(1)
        .config_yaml(&config.to_string())
        .start();
    let good = creds("ldap", "einstein:password");
    let key = ("apikey", "Mouse");
    let ldap_header = ("authorization", good.as_str());

    let (status, _, echo) = get(&gw, "/and", &[key, ldap_header]).await;
    assert_eq!(status, 200);
    let h = &echo["headers"];
    assert_eq!(h["x-credential-identifier"], "einstein");
    assert!(
        h.get("x-anonymous-consumer").is_none() && h.get("x-consumer-username").is_none(),
        "{h}"
    );
    let (status, challenge, _) = get(&gw, "/and", &[key]).await;
    assert_eq!((status, challenge.as_str()), (401, "LDAP"));
    for headers in [vec![ldap_header], vec![]] {
        let (status, challenge, _) = get(&gw, "/and", &headers).await;
        assert_eq!(status, 401);
        assert!(challenge.starts_with("Key"), "{challenge}");
    }

    // OR: key-auth's consumer stands (ldap-auth is skipped); ldap alone identifies einstein; none is the guest.
    for headers in [vec![key, ldap_header], vec![key]] {
        let (status, _, echo) = get(&gw, "/or", &headers).await;
        assert_eq!(status, 200);
        let h = &echo["headers"];
        assert_eq!(h["x-consumer-username"], "mickey");
        assert_ne!(h["x-credential-identifier"], "einstein");
        assert!(h.get("x-anonymous-consumer").is_none());
    }
    let (status, _, echo) = get(&gw, "/or", &[ldap_header]).await;
    assert_eq!(status, 200);
    assert_eq!(echo["headers"]["x-credential-identifier"], "einstein");
    assert!(echo["headers"].get("x-anonymous-consumer").is_none());
    let (status, _, echo) = get(&gw, "/or", &[]).await;
    assert_eq!(status, 200);
    assert_eq!(
        (
            &echo["headers"]["x-anonymous-consumer"],
            &echo["headers"]["x-consumer-username"]
        ),
        (&json!("true"), &json!("guest"))
    );
    assert!(echo["headers"].get("x-credential-identifier").is_none());
}

/// Kong's `keepalive`: binds reuse one connection per worker; a connection the server closed is replaced;
/// an idle one is closed when its keepalive ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_are_kept_alive_for_keepalive() {
    let mut server = Slapd::start();
    let up = EchoUpstream::start();
    let gw = gateway(
        &up,
        vec![
            route("kept", ldap(server.port, json!({}))),
            // Its own cache key (`cache_ttl`), the same pool (server and port).
            route(
                "short",
                ldap(server.port, json!({"keepalive": 300, "cache_ttl": 30})),
            ),
        ],
    );
    let status = |path: &'static str, text: &'static str| {
        let gw = &gw;
        async move {
            let value = creds("ldap", text);
            get(gw, path, &[("authorization", &value)]).await.0
        }
    };
    assert_eq!(server.clients(), 0);
    // Three binds (each a cache miss), one after the other: one connection, still open.
    assert_eq!(status("/kept", "einstein:password").await, 200);
    assert_eq!(status("/kept", "einstein:wrong").await, 401);
    assert_eq!(status("/kept", "curie:radium").await, 200);
    assert_eq!(server.clients(), 1);
    // The server restarts: the kept connection is dead, a new one binds.
    server.restart();
    assert_eq!(status("/kept", "curie:wrong").await, 401);
    assert_eq!(status("/kept", "curie:polonium").await, 401);
    assert_eq!(status("/kept", "einstein:password").await, 200, "cached");
    assert_eq!(server.clients(), 1);
    // A bind through the short keepalive takes the same connection and puts it back for 300 ms only.
    assert_eq!(status("/short", "einstein:password").await, 200);
    assert_eq!(server.clients(), 1);
    let deadline = Instant::now() + Duration::from_secs(3);
    while server.clients() > 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(server.clients(), 0, "closed after keepalive");
    assert_eq!(status("/short", "curie:radium").await, 200);
}
