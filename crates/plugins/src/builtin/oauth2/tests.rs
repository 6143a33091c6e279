//! The oauth2 plugin's pure pieces: which paths are its endpoints, Basic client credentials, PKCE
//! challenges, the redirect URI an answer goes into, and Kong's `WWW-Authenticate` values. (The flows
//! themselves are tested through the binary: `crates/sluice/tests/plugins_oauth2.rs`.)

use super::authorize::with_params;
use super::grant::{challenge, verify_pkce};
use super::params::{basic, bearer_challenge};
use super::Endpoint;
use serde_json::{json, Map, Value};

#[test]
fn endpoints_are_path_suffixes_with_an_optional_slash() {
    let name = |p: &str| Endpoint::of(p).map(Endpoint::name);
    assert_eq!(name("/oauth2/token"), Some("token"));
    assert_eq!(name("/api/v1/oauth2/token/"), Some("token"));
    assert_eq!(name("/api/oauth2/authorize"), Some("authorization"));
    for other in [
        "/oauth2/tokens",
        "/oauth2/token/x",
        "/xoauth2/token2",
        "/oauth2",
        "/",
    ] {
        assert_eq!(name(other), None, "{other}");
    }
}

#[test]
fn basic_credentials_split_at_the_first_colon() {
    assert_eq!(
        basic(b"Basic aWQ6c2VjOnJldA=="),
        Some(("id".into(), Some("sec:ret".into())))
    );
    assert_eq!(basic(b"  basic aWQ="), Some(("id".into(), None)));
    assert_eq!(basic(b"Bearer aWQ6cw=="), None);
    assert_eq!(basic(b"Basic !!!"), None);
}

#[test]
fn challenges_are_normalized_and_s256_only() {
    // Padded standard base64 and unpadded base64url name the same challenge.
    let (c, m) = challenge(Some("+/8="), None).unwrap().unwrap();
    assert_eq!((c.as_str(), m), ("-_8", "S256"));
    assert_eq!(
        challenge(Some("-_8"), Some("s256")).unwrap().unwrap().0,
        "-_8"
    );
    assert_eq!(
        challenge(Some("not base64!"), None).unwrap().unwrap().0,
        "not base64!"
    );
    assert_eq!(challenge(None, None), Ok(None));
    assert_eq!(
        challenge(Some("x"), Some("plain")),
        Err("code_challenge_method is not supported, must be S256".into())
    );
    assert_eq!(
        challenge(None, Some("S256")),
        Err("code_challenge is required when code_method is present".into())
    );
    // RFC 7636's example verifier and challenge.
    let verifier = json!("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk");
    let rfc = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";
    assert_eq!(verify_pkce(Some(&verifier), Some(rfc)), Ok(()));
    let wrong = verify_pkce(Some(&verifier), Some("x")).unwrap_err();
    assert_eq!(wrong["error"], "invalid_grant");
    let short = verify_pkce(Some(&json!("abc")), Some(rfc)).unwrap_err();
    assert_eq!(
        short["error_description"],
        "code_verifier must be between 43 and 128 characters"
    );
    let number = verify_pkce(Some(&json!(1)), Some(rfc)).unwrap_err();
    assert_eq!(number["error_description"], "code_verifier is not a string");
}

#[test]
fn answers_go_into_the_redirect_uri_in_name_order() {
    let mut answer = Map::new();
    answer.insert("state".into(), Value::from("a b&c"));
    answer.insert("code".into(), Value::from("XYZ"));
    assert_eq!(
        with_params("https://app.test/cb?z=1&code=old", answer.clone(), false),
        "https://app.test/cb?code=XYZ&state=a%20b%26c&z=1"
    );
    assert_eq!(
        with_params("https://app.test/cb?q=1", answer, true),
        "https://app.test/cb?q=1#code=XYZ&state=a%20b%26c"
    );
}

#[test]
fn www_authenticate_values_are_kongs() {
    assert_eq!(bearer_challenge(None, None), "Bearer");
    assert_eq!(bearer_challenge(Some(""), None), "Bearer");
    assert_eq!(
        bearer_challenge(Some("api"), Some(("invalid_token", "d"))),
        "Bearer realm=\"api\", error=\"invalid_token\", error_description=\"d\""
    );
}

/// Kong's `check_https`: the connection's own scheme, or with `accept_http_if_already_terminated` the
/// first `X-Forwarded-Proto` of a peer in `trusted_ips`; never the header of an untrusted peer.
#[test]
fn https_is_the_scheme_or_a_trusted_proxys_forwarded_proto_when_accepted() {
    use super::grant::https;
    use crate::testing::{compile, request};
    let (_, compiled) = compile("_format_version: \"3.0\"\n");
    let ctx = |headers: &[(&str, &str)], trusted: bool, scheme: &'static str| {
        let mut ctx = crate::RequestCtx::detached(
            request("POST", "/oauth2/token", headers),
            compiled.credentials(),
        );
        (ctx.peer_trusted, ctx.scheme) = (trusted, scheme);
        ctx
    };
    let forwarded = [("x-forwarded-proto", "HTTPS")];
    assert!(https(&ctx(&[], false, "https"), false));
    assert!(!https(&ctx(&forwarded, true, "http"), false));
    assert!(https(&ctx(&forwarded, true, "http"), true));
    assert!(!https(&ctx(&forwarded, false, "http"), true));
    assert!(!https(
        &ctx(&[("x-forwarded-proto", "http")], true, "http"),
        true
    ));
    assert!(!https(&ctx(&[], true, "http"), true));
}
