//! Kong's upstream headers after authentication, made from the values the snapshot keeps per consumer and
//! credential ([`crate::credentials`]): the same headers as formatting them per request, client-sent copies
//! removed, and the fallbacks for a consumer outside the snapshot and an identifier that cannot be a
//! header value.

use super::identify;
use crate::testing::{block_on, compile, request};
use crate::{CredentialRef, Credentials, RequestCtx};
use base64::Engine;
use http::HeaderMap;

const ALICE: &str = "6a1d1a3e-52a0-4d2c-9f3e-3f0b7d6f1a01";
const ALICE_KEY: &str = "6a1d1a3e-52a0-4d2c-9f3e-3f0b7d6f1a02";
const ODD_CREDENTIAL: &str = "6a1d1a3e-52a0-4d2c-9f3e-3f0b7d6f1a03";
/// A password whose Basic credentials are too long to decode on the stack.
const LONG: &str = "0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz\
0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz\
0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz";

/// A service whose route runs `plugin`, and consumers alice (key, basic credential) and guest.
fn config(plugin: &str) -> String {
    format!(
        r#"{{"_format_version": "3.0",
  "services": [{{"name": "s", "url": "http://127.0.0.1:1", "routes": [{{"name": "r", "paths": ["/"]}}]}}],
  "plugins": [{plugin}],
  "consumers": [
    {{"id": "{ALICE}", "username": "alice", "custom_id": "A1",
      "keyauth_credentials": [{{"id": "{ALICE_KEY}", "key": "alice-key"}}],
      "basicauth_credentials": [{{"username": "alice", "password": "pw"}},
                                {{"id": "{ODD_CREDENTIAL}", "username": "odd\u0001name", "password": "pw"}},
                                {{"username": "long", "password": "{LONG}"}}]}},
    {{"username": "guest"}}]}}"#
    )
}

/// Runs the route's chain on a GET of `uri` with `headers`: the answer's status (None when it went on),
/// and the request's headers afterwards.
fn run(plugin: &str, uri: &str, headers: &[(&str, &str)]) -> (Option<u16>, HeaderMap) {
    let (_, compiled) = compile(&config(plugin));
    let mut ctx = RequestCtx::detached(request("GET", uri, headers), compiled.credentials());
    let answer = block_on(compiled.route_chain(0).access(&mut ctx));
    (answer.map(|r| r.status.as_u16()), ctx.request.headers)
}

fn text<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers.get(name).map(|v| v.to_str().unwrap())
}

const FORGED: [(&str, &str); 5] = [
    ("X-Consumer-ID", "forged"),
    ("x-consumer-custom-id", "forged"),
    ("X-Consumer-Username", "forged"),
    ("x-credential-identifier", "forged"),
    ("X-Anonymous-Consumer", "forged"),
];

#[test]
fn key_auth_sets_the_consumers_headers_and_drops_forged_ones() {
    let mut headers = vec![("apikey", "alice-key")];
    headers.extend(FORGED);
    let (answer, h) = run(r#"{"name": "key-auth"}"#, "/", &headers);
    assert_eq!(answer, None);
    assert_eq!(text(&h, "x-consumer-id"), Some(ALICE));
    assert_eq!(text(&h, "x-consumer-custom-id"), Some("A1"));
    assert_eq!(text(&h, "x-consumer-username"), Some("alice"));
    assert_eq!(text(&h, "x-credential-identifier"), Some(ALICE_KEY));
    assert_eq!(h.get("x-anonymous-consumer"), None);
    assert!(h.values().all(|v| v != "forged"));
    assert_eq!(
        text(&h, "apikey"),
        Some("alice-key"),
        "kept without hide_credentials"
    );
}

#[test]
fn the_anonymous_consumer_has_no_credential_and_no_forged_headers() {
    let plugin = r#"{"name": "key-auth", "config": {"anonymous": "guest"}}"#;
    let (answer, h) = run(plugin, "/", &FORGED);
    assert_eq!(answer, None);
    assert_eq!(text(&h, "x-consumer-username"), Some("guest"));
    assert_eq!(text(&h, "x-anonymous-consumer"), Some("true"));
    assert_eq!(h.get("x-consumer-custom-id"), None);
    assert_eq!(h.get("x-credential-identifier"), None);
    assert!(h.values().all(|v| v != "forged"));
}

#[test]
fn hide_credentials_removes_the_key_where_it_was_found() {
    let plugin = r#"{"name": "key-auth", "config": {"hide_credentials": true, "key_names": ["apikey", "x-key"]}}"#;
    let (answer, h) = run(plugin, "/", &[("x-key", "alice-key")]);
    assert_eq!((answer, h.get("x-key")), (None, None));
    assert_eq!(text(&h, "x-consumer-username"), Some("alice"));
    let (_, compiled) = compile(&config(plugin));
    let head = request("GET", "/p?a=1&x-key=alice-key&b=2", &[]);
    let mut ctx = RequestCtx::detached(head, compiled.credentials());
    assert!(block_on(compiled.route_chain(0).access(&mut ctx)).is_none());
    assert_eq!(ctx.request.uri, "/p?a=1&b=2");
    let (answer, _) = run(plugin, "/", &[("x-key", "unknown")]);
    assert_eq!(answer, Some(401));
}

#[test]
fn basic_auth_names_the_credential_by_its_username_or_else_its_id() {
    let basic = |user: &str| {
        let encoded = base64::engine::general_purpose::STANDARD.encode(format!("{user}:pw"));
        format!("Basic {encoded}")
    };
    let plugin = r#"{"name": "basic-auth"}"#;
    let (answer, h) = run(plugin, "/", &[("authorization", &basic("alice"))]);
    assert_eq!(answer, None);
    assert_eq!(text(&h, "x-credential-identifier"), Some("alice"));
    assert_eq!(text(&h, "x-consumer-id"), Some(ALICE));
    let (answer, h) = run(plugin, "/", &[("authorization", &basic("odd\u{1}name"))]);
    assert_eq!(answer, None);
    assert_eq!(text(&h, "x-credential-identifier"), Some(ODD_CREDENTIAL));
}

#[test]
fn basic_auth_checks_the_password_however_long_the_credentials() {
    let header = |user: &str, pass: &str| {
        let encoded = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{pass}"));
        ("authorization", format!("Basic {encoded}"))
    };
    let plugin = r#"{"name": "basic-auth"}"#;
    let status = |user: &str, pass: &str| {
        let (name, value) = header(user, pass);
        run(plugin, "/", &[(name, value.as_str())]).0
    };
    assert!(format!("long:{LONG}").len() > 256, "decoded on the heap");
    assert_eq!(status("long", LONG), None);
    assert_eq!(status("long", &LONG[1..]), Some(401));
    assert_eq!(status("alice", "pw"), None);
    for wrong in ["pv", "pw ", "", "PW"] {
        assert_eq!(status("alice", wrong), Some(401), "{wrong:?}");
    }
    let not_base64 = run(plugin, "/", &[("authorization", "Basic !!!")]).0;
    assert_eq!(not_base64, Some(401));
}

#[test]
fn a_consumer_outside_the_snapshot_gets_its_headers_made_at_once() {
    let consumer = sluice_model::Consumer {
        id: ALICE.parse().unwrap(),
        username: Some("elsewhere".into()),
        custom_id: None,
        tags: None,
        created_at: 0,
        updated_at: 0,
    };
    let credentials = Credentials::default();
    let mut ctx = RequestCtx::detached(request("GET", "/", &FORGED), &credentials);
    let credential = CredentialRef {
        id: ALICE_KEY.parse().unwrap(),
        plugin: "test",
    };
    identify(&mut ctx, &consumer, Some(credential));
    let h = &ctx.request.headers;
    assert_eq!(text(h, "x-consumer-id"), Some(ALICE));
    assert_eq!(text(h, "x-consumer-username"), Some("elsewhere"));
    assert_eq!(text(h, "x-credential-identifier"), Some(ALICE_KEY));
    assert_eq!(
        (h.get("x-consumer-custom-id"), h.get("x-anonymous-consumer")),
        (None, None)
    );
    assert_eq!(ctx.consumer.map(|c| c.id), Some(consumer.id));
}

/// basic-auth keeps the `Authorization` values it verified on the snapshot's credentials: a repeat is
/// identified from there with the same headers, a value that differs is checked anew, and a new config
/// (alice's password changed) starts without them.
#[test]
fn basic_auth_remembers_verified_values_on_their_snapshot_only() {
    let basic = |pass: &str| {
        let encoded = base64::engine::general_purpose::STANDARD.encode(format!("alice:{pass}"));
        format!("Basic {encoded}")
    };
    let plugin = r#"{"name": "basic-auth"}"#;
    let (_, compiled) = compile(&config(plugin));
    let run_on = |compiled: &crate::CompiledPlugins, value: &str| {
        let headers = [("authorization", value)];
        let mut ctx = RequestCtx::detached(request("GET", "/", &headers), compiled.credentials());
        let answer = block_on(compiled.route_chain(0).access(&mut ctx));
        (answer.map(|r| r.status.as_u16()), ctx.request.headers)
    };
    let good = basic("pw");
    assert!(compiled
        .credentials()
        .basic_verified(good.as_bytes())
        .is_none());
    let first = run_on(&compiled, &good);
    assert_eq!(first.0, None);
    let kept = compiled.credentials().basic_verified(good.as_bytes());
    assert_eq!(kept.map(|k| k.credential.username.as_str()), Some("alice"));
    let again = run_on(&compiled, &good);
    assert_eq!(again, first);
    assert_eq!(text(&again.1, "x-credential-identifier"), Some("alice"));
    assert_eq!(text(&again.1, "x-consumer-id"), Some(ALICE));
    assert_eq!(run_on(&compiled, &basic("pv")).0, Some(401));
    let alice = r#""username": "alice", "password": "#;
    let changed = config(plugin).replace(&format!("{alice}\"pw\""), &format!("{alice}\"new\""));
    assert_ne!(changed, config(plugin));
    let (_, reloaded) = compile(&changed);
    assert_eq!(run_on(&reloaded, &good).0, Some(401));
    assert_eq!(run_on(&reloaded, &basic("new")).0, None);
}
