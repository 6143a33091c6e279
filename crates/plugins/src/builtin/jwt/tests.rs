//! Unit tests of the jwt plugin's parts: finding tokens, decoding them with Kong's messages, claims, HMAC
//! verification and the config check. Tokens of every algorithm, made by PyJWT, are tested through the
//! real binary in `crates/sluice/tests/plugins_jwt.rs`.

use super::find::{bearer, tokens, Found, Tokens};
use super::keys::BASE64URL;
use super::token::{decode, verify_claims, within_maximum, Alg, Claim};
use super::*;
use base64::Engine;
use http::HeaderMap;

fn b64(text: &str) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(text)
}

fn hs256(claims: &str, secret: &[u8]) -> String {
    let signed = format!("{}.{}", b64(r#"{"alg":"HS256","typ":"JWT"}"#), b64(claims));
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, secret);
    let tag = ring::hmac::sign(&key, signed.as_bytes());
    format!(
        "{signed}.{}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(tag)
    )
}

fn secret(alg: &str, secret: &str) -> sluice_model::JwtSecret {
    serde_json::from_value(serde_json::json!({
        "id": uuid::Uuid::new_v4(), "consumer": {"id": uuid::Uuid::new_v4()}, "key": "k",
        "secret": secret, "rsa_public_key": null, "algorithm": alg, "tags": null, "created_at": 0,
    }))
    .unwrap()
}

#[test]
fn bearer_follows_kongs_unanchored_pattern() {
    assert_eq!(bearer(b"Bearer abc"), Some(&b"abc"[..]));
    assert_eq!(bearer(b"bearer   a b"), Some(&b"a b"[..]));
    assert_eq!(bearer(b"Token x, Bearer y"), Some(&b"y"[..]));
    assert_eq!(bearer(b"BEARER x"), None);
    assert_eq!(bearer(b"Bearer"), None);
    assert_eq!(bearer(b"Bearer "), None);
    assert_eq!(bearer(b"Bearerx"), None);
}

#[test]
fn tokens_come_from_query_cookies_and_headers_and_count_once_each() {
    let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let (params, cookies) = (names(&["jwt"]), names(&["auth"]));
    let authz = [http::header::AUTHORIZATION];
    let mut h = HeaderMap::new();
    let none = tokens(Some("a=1"), &h, &params, &cookies, &authz);
    assert_eq!(none, Tokens::None);
    let q = tokens(Some("x=1&jwt=a%2Eb+c"), &h, &params, &cookies, &authz);
    assert_eq!(q, Tokens::One(Found::Text("a.b c".into())));
    assert_eq!(
        tokens(Some("jwt"), &h, &params, &cookies, &authz),
        Tokens::One(Found::Flag)
    );
    assert_eq!(
        tokens(Some("jwt="), &h, &params, &cookies, &authz),
        Tokens::None
    );
    h.insert(http::header::COOKIE, "x=1; Auth=t1".parse().unwrap());
    assert_eq!(
        tokens(None, &h, &params, &cookies, &authz),
        Tokens::One(Found::Text("t1".into()))
    );
    // The same token twice is one token; two different ones are "Multiple tokens provided".
    h.insert(http::header::AUTHORIZATION, "Bearer t1".parse().unwrap());
    assert_eq!(
        tokens(Some("jwt=t1"), &h, &params, &cookies, &authz),
        Tokens::One(Found::Text("t1".into()))
    );
    assert_eq!(
        tokens(Some("jwt=t2"), &h, &params, &cookies, &authz),
        Tokens::Many
    );
    assert_eq!(
        tokens(
            Some("jwt=t2&jwt=t3"),
            &HeaderMap::new(),
            &params,
            &[],
            &authz
        ),
        Tokens::Many
    );
}

#[test]
fn decoding_fails_with_kongs_reasons_in_kongs_order() {
    let h = b64(r#"{"alg":"HS256"}"#);
    let c = b64(r#"{"iss":"k"}"#);
    assert_eq!(decode("abc", "iss").unwrap_err(), "invalid JSON");
    assert_eq!(
        decode(&format!("{h}.{c}"), "iss").unwrap_err(),
        "invalid JSON"
    );
    assert_eq!(
        decode(&format!("{h}.!!.x"), "iss").unwrap_err(),
        "invalid JSON"
    );
    let none = b64(r#"{"alg":"none"}"#);
    assert_eq!(
        decode(&format!("{none}.{c}."), "iss").unwrap_err(),
        "invalid alg"
    );
    assert_eq!(
        decode(&format!("{h}.{}.", b64("[1]")), "iss").unwrap_err(),
        "invalid claims"
    );
    assert_eq!(
        decode(&format!("{h}.{c}.a*b"), "iss").unwrap_err(),
        "invalid signature"
    );
    let text = format!("{h}.{c}.AQID");
    let ok = decode(&text, "iss").unwrap();
    assert_eq!(
        (ok.alg, ok.signature.as_slice()),
        (Alg::HS256, &[1u8, 2, 3][..])
    );
    assert_eq!(ok.signed, format!("{h}.{c}"));
    // The third part keeps any further dots, so it is not base64 and the token is refused.
    assert_eq!(
        decode(&format!("{h}.{c}.AQID.more"), "iss").unwrap_err(),
        "invalid signature"
    );
    assert_eq!(BASE64URL.decode("AQ==").ok(), BASE64URL.decode("AQ").ok());
}

/// A token (unsigned) with these header and claims, decoded.
fn token(header: Value, claims: Value) -> super::token::Token<'static> {
    let text = format!("{}.{}.", b64(&header.to_string()), b64(&claims.to_string()));
    decode(Box::leak(text.into_boxed_str()), "iss").unwrap()
}

#[test]
fn the_key_claim_comes_from_the_claims_then_the_header() {
    let hs = |extra: Value| {
        let mut h = serde_json::json!({"alg": "HS256"});
        h.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        h
    };
    let t = token(
        hs(serde_json::json!({"iss": "h"})),
        serde_json::json!({"iss": "c"}),
    );
    assert_eq!(t.key, Some(Value::from("c")));
    let t = token(
        hs(serde_json::json!({"iss": "h"})),
        serde_json::json!({"iss": false}),
    );
    assert_eq!(t.key, Some(Value::from("h")));
    let t = token(
        hs(serde_json::json!({})),
        serde_json::json!({"iss": null, "sub": {"a": [1]}}),
    );
    assert_eq!(t.key, None);
    // Escaped names are names too; a later duplicate wins.
    let text = format!(
        "{}.{}.",
        b64(r#"{"alg":"HS256"}"#),
        b64(r#"{"iss":"a","\u0069ss":"b"}"#)
    );
    assert_eq!(decode(&text, "iss").unwrap().key, Some(Value::from("b")));
    // Malformed JSON anywhere is "invalid JSON", even after a non-object.
    let text = format!("{}.{}.", b64("[1"), b64("{}"));
    assert_eq!(decode(&text, "iss").unwrap_err(), "invalid JSON");
    let text = format!("{}.{}.", b64(r#"{"alg":"HS256"}"#), b64("{} x"));
    assert_eq!(decode(&text, "iss").unwrap_err(), "invalid JSON");
}

#[test]
fn registered_claims_and_maximum_expiration() {
    let hs = || serde_json::json!({"alg": "HS256"});
    let both = [Claim::Exp, Claim::Nbf];
    let t = token(hs(), serde_json::json!({"exp": 101, "nbf": 100}));
    assert!(verify_claims(t.times, &both, 100.0).is_empty());
    assert_eq!(
        verify_claims(
            token(hs(), serde_json::json!({"exp": 100, "nbf": 101})).times,
            &both,
            100.0
        ),
        [("exp", "token expired"), ("nbf", "token not valid yet")]
    );
    assert_eq!(
        verify_claims(
            token(hs(), serde_json::json!({"exp": "200"})).times,
            &[Claim::Exp],
            100.0
        ),
        [("exp", "must be a number")]
    );
    assert!(within_maximum(
        token(hs(), serde_json::json!({"exp": 160})).times,
        60.0,
        100.0
    ));
    assert!(!within_maximum(
        token(hs(), serde_json::json!({"exp": 161})).times,
        60.0,
        100.0
    ));
    assert!(!within_maximum(
        token(hs(), serde_json::json!({})).times,
        60.0,
        100.0
    ));
}

#[test]
fn hmac_signatures_verify_with_the_plain_or_base64url_secret() {
    let token = hs256(r#"{"iss":"k"}"#, b"s3cret?");
    let t = decode(&token, "iss").unwrap();
    let plain = JwtCredential::new(&secret("HS256", "s3cret?"));
    assert_eq!(
        plain.verify(t.signed.as_bytes(), &t.signature, false),
        Ok(())
    );
    assert_eq!(
        plain.verify(t.signed.as_bytes(), b"wrong", false),
        Err(Rejected::Signature)
    );
    // "czNjcmV0Pw" is base64url of "s3cret?", which only verifies with secret_is_base64.
    let encoded = JwtCredential::new(&secret("HS256", "czNjcmV0Pw"));
    assert_eq!(
        encoded.verify(t.signed.as_bytes(), &t.signature, true),
        Ok(())
    );
    assert_eq!(
        encoded.verify(t.signed.as_bytes(), &t.signature, false),
        Err(Rejected::Signature)
    );
    let undecodable = JwtCredential::new(&secret("HS256", "not*base64"));
    assert_eq!(
        undecodable.verify(t.signed.as_bytes(), &t.signature, true),
        Err(Rejected::NoKey)
    );
    // An ES credential without a public key (Kong's schema allows it) has no key to verify with.
    let es = JwtCredential::new(&secret("ES256", "x"));
    assert_eq!(
        es.verify(t.signed.as_bytes(), &t.signature, false),
        Err(Rejected::NoKey)
    );
}

#[test]
fn maximum_expiration_needs_exp_among_the_claims_to_verify() {
    let config = |v: Value| v.as_object().unwrap().clone();
    let e = check(&config(
        serde_json::json!({"maximum_expiration": 10, "claims_to_verify": ["nbf"]}),
    ));
    assert_eq!(e.unwrap_err()[0].message, "expected to contain: exp");
    assert!(check(&config(
        serde_json::json!({"maximum_expiration": 10, "claims_to_verify": ["exp"]})
    ))
    .is_ok());
    // Kong's conditional passes a null set.
    assert!(check(&config(
        serde_json::json!({"maximum_expiration": 10, "claims_to_verify": null})
    ))
    .is_ok());
    assert!(check(&config(
        serde_json::json!({"maximum_expiration": 0, "claims_to_verify": []})
    ))
    .is_ok());
}
