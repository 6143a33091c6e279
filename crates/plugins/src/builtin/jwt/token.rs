//! A JWT taken apart per request the way Kong's parser does it: three base64url parts (the third keeps any
//! further dots), a JSON header with a known `alg`, JSON claims, the raw signature; and the registered
//! claims `exp` and `nbf` checked against the clock.

use super::keys::BASE64URL;
use base64::Engine;
use serde_json::{Map, Value};

/// The algorithms Kong 3.9 knows, by their JOSE names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(clippy::upper_case_acronyms)]
pub enum Alg {
    HS256,
    HS384,
    HS512,
    RS256,
    RS384,
    RS512,
    ES256,
    ES384,
    ES512,
    PS256,
    PS384,
    PS512,
    EdDSA,
}

impl Alg {
    pub fn from_name(name: &str) -> Option<Alg> {
        Some(match name {
            "HS256" => Alg::HS256,
            "HS384" => Alg::HS384,
            "HS512" => Alg::HS512,
            "RS256" => Alg::RS256,
            "RS384" => Alg::RS384,
            "RS512" => Alg::RS512,
            "ES256" => Alg::ES256,
            "ES384" => Alg::ES384,
            "ES512" => Alg::ES512,
            "PS256" => Alg::PS256,
            "PS384" => Alg::PS384,
            "PS512" => Alg::PS512,
            "EdDSA" => Alg::EdDSA,
            _ => return None,
        })
    }
}

/// A decoded token.
#[derive(Debug)]
pub struct Token<'t> {
    /// `header.claims` as sent: what the signature covers.
    pub signed: &'t str,
    pub alg: Alg,
    pub header: Map<String, Value>,
    pub claims: Map<String, Value>,
    pub signature: Vec<u8>,
}

/// Kong's reasons a token is unreadable, shown after "Bad token; ".
pub const INVALID_JSON: &str = "invalid JSON";
pub const INVALID_ALG: &str = "invalid alg";
pub const INVALID_CLAIMS: &str = "invalid claims";
pub const INVALID_SIGNATURE: &str = "invalid signature";

fn json(part: &str) -> Option<Value> {
    serde_json::from_slice(&BASE64URL.decode(part).ok()?).ok()
}

/// Parses `text` with Kong's checks, in Kong's order.
pub fn decode(text: &str) -> Result<Token<'_>, &'static str> {
    let mut parts = text.splitn(3, '.');
    let (Some(h64), Some(c64), Some(s64)) = (parts.next(), parts.next(), parts.next()) else {
        return Err(INVALID_JSON);
    };
    let (Some(header), Some(claims)) = (json(h64), json(c64)) else {
        return Err(INVALID_JSON);
    };
    let Value::Object(header) = header else {
        return Err(INVALID_ALG);
    };
    let alg = header
        .get("alg")
        .and_then(Value::as_str)
        .and_then(Alg::from_name)
        .ok_or(INVALID_ALG)?;
    let Value::Object(claims) = claims else {
        return Err(INVALID_CLAIMS);
    };
    let signature = BASE64URL.decode(s64).map_err(|_| INVALID_SIGNATURE)?;
    Ok(Token {
        signed: &text[..h64.len() + 1 + c64.len()],
        alg,
        header,
        claims,
        signature,
    })
}

/// A registered claim the plugin may verify (`claims_to_verify`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Claim {
    Exp,
    Nbf,
}

impl Claim {
    pub fn name(self) -> &'static str {
        match self {
            Claim::Exp => "exp",
            Claim::Nbf => "nbf",
        }
    }
}

/// Kong's checks of `claims` at `now` (whole seconds): each failing claim with its message, in order.
pub fn verify_claims(
    claims: &Map<String, Value>,
    which: &[Claim],
    now: f64,
) -> Vec<(&'static str, &'static str)> {
    let mut errors = Vec::new();
    for claim in which {
        let message = match (claim, claims.get(claim.name()).and_then(Value::as_f64)) {
            (_, None) => "must be a number",
            (Claim::Exp, Some(exp)) if exp <= now => "token expired",
            (Claim::Nbf, Some(nbf)) if nbf > now => "token not valid yet",
            _ => continue,
        };
        errors.push((claim.name(), message));
    }
    errors
}

/// Kong's `maximum_expiration`: `exp` must be present and at most `max` seconds ahead.
pub fn within_maximum(claims: &Map<String, Value>, max: f64, now: f64) -> bool {
    claims
        .get("exp")
        .and_then(Value::as_f64)
        .is_some_and(|exp| exp - now <= max)
}
