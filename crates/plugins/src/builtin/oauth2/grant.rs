//! What both endpoints share once a request is accepted: issuing a token (Kong's `generate_token`, with its
//! refresh token and time to live), PKCE (Kong supports the `S256` method only), and the HTTPS rule.

use super::config::Config;
use super::params::{error, now};
use super::store::{Store, Token};
use crate::ctx::RequestCtx;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE_NO_PAD};
use base64::Engine;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use sluice_model::declarative::random_secret;
use sluice_model::OAuth2Credential;
use uuid::Uuid;

/// A token to issue: to whom, for what.
pub struct Issue {
    /// The route's service (None for a route without one); ignored with `global_credentials`.
    pub service: Option<Uuid>,
    pub credential: Uuid,
    pub authenticated_userid: Option<String>,
    pub scope: Option<String>,
    /// No refresh token (client credentials, implicit grant).
    pub no_refresh: bool,
    /// The token a refresh renews (in place with `reuse_refresh_token`).
    pub renews: Option<Token>,
}

/// Stores a new token (or renews one) and returns Kong's answer parameters (the endpoints add `state`).
pub async fn issue(store: &Store, config: &Config, i: Issue) -> Result<Map<String, Value>, String> {
    let expiration = config.token_expiration as i64;
    let ttl = (expiration > 0 && config.refresh_token_ttl > 0.0)
        .then_some(config.refresh_token_ttl as u64);
    let token = match i.renews.filter(|_| config.reuse_refresh_token) {
        Some(old) => {
            let renewed = Token {
                access_token: random_secret(),
                expires_in: expiration,
                created_at: now(),
                ..old.clone()
            };
            store
                .save_token(renewed.clone(), ttl, Some(&old.access_token))
                .await?;
            renewed
        }
        None => {
            let token = Token {
                id: Uuid::new_v4(),
                credential: i.credential,
                service: i.service.filter(|_| !config.global_credentials),
                expires_in: expiration,
                access_token: random_secret(),
                refresh_token: (!i.no_refresh && expiration > 0).then(random_secret),
                authenticated_userid: i.authenticated_userid,
                scope: i.scope,
                created_at: now(),
            };
            store.save_token(token.clone(), ttl, None).await?;
            token
        }
    };
    let mut out = Map::new();
    out.insert("access_token".into(), token.access_token.into());
    out.insert("token_type".into(), "bearer".into());
    if expiration > 0 {
        out.insert("expires_in".into(), token.expires_in.into());
    }
    if let Some(refresh) = token.refresh_token {
        out.insert("refresh_token".into(), refresh.into());
    }
    Ok(out)
}

/// Kong's `check_https`: the client used HTTPS, or (with `accept_http_if_already_terminated`) the peer is
/// in `trusted_ips` and its first `X-Forwarded-Proto` says `https`.
pub fn https(ctx: &RequestCtx<'_>, accept_terminated: bool) -> bool {
    ctx.scheme == "https"
        || (accept_terminated
            && ctx.peer_trusted
            && ctx
                .request
                .headers
                .get("x-forwarded-proto")
                .is_some_and(|p| p.as_bytes().eq_ignore_ascii_case(b"https")))
}

/// A client's PKCE challenge from the authorize request: normalized to unpadded base64url, with its method
/// (`S256` when none is given). Kong refuses any other method, `plain` included.
pub fn challenge(
    challenge: Option<&str>,
    method: Option<&str>,
) -> Result<Option<(String, &'static str)>, String> {
    let Some(challenge) = challenge else {
        return match method {
            Some(_) => Err("code_challenge is required when code_method is present".into()),
            None => Ok(None),
        };
    };
    if method.is_some_and(|m| m != "S256" && m != "s256") {
        return Err("code_challenge_method is not supported, must be S256".into());
    }
    let standard = challenge.replace('-', "+").replace('_', "/");
    let decoded = STANDARD
        .decode(&standard)
        .or_else(|_| STANDARD_NO_PAD.decode(&standard));
    let normalized = match decoded {
        Ok(bytes) => URL_SAFE_NO_PAD.encode(bytes),
        Err(_) => challenge.to_string(),
    };
    Ok(Some((normalized, "S256")))
}

/// Whether the exchange of a code needs PKCE: the code was made with a challenge, or the client is public
/// (unless `pkce: none`), or every client must (`pkce: strict`).
pub fn requires_pkce(config: &Config, client: &OAuth2Credential, code_had_challenge: bool) -> bool {
    let pkce = config.pkce.as_deref().unwrap_or("lax");
    code_had_challenge
        || (client.client_type == "public" && pkce != "none")
        || (client.client_type == "confidential" && pkce == "strict")
}

/// Kong's check of a `code_verifier` against the code's challenge.
pub fn verify_pkce(
    verifier: Option<&Value>,
    challenge: Option<&str>,
) -> Result<(), Map<String, Value>> {
    let Some(verifier) = verifier else {
        return Err(error(
            "invalid_request",
            "code_verifier is required for PKCE authorization requests",
        ));
    };
    let Some(verifier) = verifier.as_str() else {
        return Err(error("invalid_request", "code_verifier is not a string"));
    };
    if !(43..=128).contains(&verifier.len()) {
        return Err(error(
            "invalid_request",
            "code_verifier must be between 43 and 128 characters",
        ));
    }
    let computed = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
    match challenge.is_some_and(|c| c == computed) {
        true => Ok(()),
        false => Err(error("invalid_grant", "Invalid code")),
    }
}
