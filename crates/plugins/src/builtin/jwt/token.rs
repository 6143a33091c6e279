//! A JWT taken apart per request the way Kong's parser does it: three base64url parts (the third keeps any
//! further dots), a JSON header with a known `alg`, JSON claims, the raw signature; and the registered
//! claims `exp` and `nbf` checked against the clock.

use super::keys::BASE64URL;
use base64::Engine;
use serde::de::DeserializeSeed;
use serde_json::Value;

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

/// A decoded token: only what the plugin reads is kept (the JSON is checked whole, but no map is built).
#[derive(Debug)]
pub struct Token<'t> {
    /// `header.claims` as sent: what the signature covers.
    pub signed: &'t str,
    pub alg: Alg,
    /// The key claim: from the claims, else from the token's header (Kong's `claims[k] or header[k]`);
    /// `null` and `false` count as absent.
    pub key: Option<Value>,
    pub times: Times,
    pub signature: Vec<u8>,
}

/// The registered time claims as numbers (None: absent, or not a number).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Times {
    pub exp: Option<f64>,
    pub nbf: Option<f64>,
}

/// Kong's reasons a token is unreadable, shown after "Bad token; ".
pub const INVALID_JSON: &str = "invalid JSON";
pub const INVALID_ALG: &str = "invalid alg";
pub const INVALID_CLAIMS: &str = "invalid claims";
pub const INVALID_SIGNATURE: &str = "invalid signature";

/// Why a part gave no object.
enum Unreadable {
    /// Not base64url or not JSON.
    Malformed,
    /// JSON, but not an object.
    NotObject,
}

/// The values of `names` in the JSON object a base64url part holds.
fn pick(part: &str, names: &[&str]) -> Result<Vec<Option<Value>>, Unreadable> {
    let bytes = BASE64URL.decode(part).map_err(|_| Unreadable::Malformed)?;
    let mut de = serde_json::Deserializer::from_slice(&bytes);
    match Pick(names)
        .deserialize(&mut de)
        .and_then(|v| de.end().map(|()| v))
    {
        Ok(values) => Ok(values),
        Err(e) if e.classify() == serde_json::error::Category::Data => {
            match serde_json::from_slice::<serde::de::IgnoredAny>(&bytes) {
                Ok(_) => Err(Unreadable::NotObject),
                Err(_) => Err(Unreadable::Malformed),
            }
        }
        Err(_) => Err(Unreadable::Malformed),
    }
}

/// Parses `text` with Kong's checks, in Kong's order; `key_claim` is the plugin's `key_claim_name`.
pub fn decode<'t>(text: &'t str, key_claim: &str) -> Result<Token<'t>, &'static str> {
    let mut parts = text.splitn(3, '.');
    let (Some(h64), Some(c64), Some(s64)) = (parts.next(), parts.next(), parts.next()) else {
        return Err(INVALID_JSON);
    };
    let (header, claims) = match (
        pick(h64, &["alg", key_claim]),
        pick(c64, &[key_claim, "exp", "nbf"]),
    ) {
        (Err(Unreadable::Malformed), _) | (_, Err(Unreadable::Malformed)) => {
            return Err(INVALID_JSON)
        }
        (Err(Unreadable::NotObject), _) => return Err(INVALID_ALG),
        (Ok(header), claims) => (header, claims),
    };
    let [alg, header_key]: [Option<Value>; 2] = header.try_into().map_err(|_| INVALID_ALG)?;
    let alg = alg
        .as_ref()
        .and_then(Value::as_str)
        .and_then(Alg::from_name)
        .ok_or(INVALID_ALG)?;
    let Some([claims_key, exp, nbf]) = claims
        .ok()
        .and_then(|c| <[Option<Value>; 3]>::try_from(c).ok())
    else {
        return Err(INVALID_CLAIMS);
    };
    let signature = BASE64URL.decode(s64).map_err(|_| INVALID_SIGNATURE)?;
    let present = |v: &Value| !v.is_null() && *v != Value::Bool(false);
    let key = claims_key
        .filter(present)
        .or_else(|| header_key.filter(present));
    Ok(Token {
        signed: &text[..h64.len() + 1 + c64.len()],
        alg,
        key,
        times: Times {
            exp: exp.as_ref().and_then(Value::as_f64),
            nbf: nbf.as_ref().and_then(Value::as_f64),
        },
        signature,
    })
}

/// Collects the values of some names from a JSON object, skipping (but checking) the rest.
struct Pick<'n>(&'n [&'n str]);

impl<'de> serde::de::DeserializeSeed<'de> for Pick<'_> {
    type Value = Vec<Option<Value>>;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Pick<'_> {
    type Value = Vec<Option<Value>>;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON object")
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut out = vec![None; self.0.len()];
        while let Some(i) = map.next_key_seed(Name(self.0))? {
            match i {
                Some(i) => out[i] = Some(map.next_value::<Value>()?),
                None => {
                    map.next_value::<serde::de::IgnoredAny>()?;
                }
            }
        }
        Ok(out)
    }
}

/// A key of the object: the index of the name it equals, if any (no allocation).
struct Name<'n>(&'n [&'n str]);

impl<'de> serde::de::DeserializeSeed<'de> for Name<'_> {
    type Value = Option<usize>;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_str(self)
    }
}

impl serde::de::Visitor<'_> for Name<'_> {
    type Value = Option<usize>;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a string")
    }
    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(self.0.iter().position(|n| *n == v))
    }
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

/// Kong's checks of the token's claims at `now` (whole seconds): each failing claim with its message, in
/// order.
pub fn verify_claims(times: Times, which: &[Claim], now: f64) -> Vec<(&'static str, &'static str)> {
    let mut errors = Vec::new();
    for claim in which {
        let value = match claim {
            Claim::Exp => times.exp,
            Claim::Nbf => times.nbf,
        };
        let message = match (claim, value) {
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
pub fn within_maximum(times: Times, max: f64, now: f64) -> bool {
    times.exp.is_some_and(|exp| exp - now <= max)
}
