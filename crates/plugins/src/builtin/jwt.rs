//! `jwt` (priority 1450, access): a signed JSON Web Token whose key claim (`iss` by default) names a
//! `jwt_secrets` credential identifies the consumer. Kong 3.9's checks, in its order, with its 401 bodies
//! and `WWW-Authenticate` values; the parts are in `jwt/` (where tokens are found, decoding, verification).

mod find;
mod keys;
mod token;
mod verified;

use super::auth;
use crate::ctx::{CredentialRef, RequestCtx};
use crate::plugin::{Flow, Plugin, Registered};
use crate::registry::{typed_config, BuildCtx, Builtin};
use crate::response::PluginResponse;
use find::{Found, Tokens};
pub use keys::JwtCredential;
use keys::Rejected;
use serde::Deserialize;
use serde_json::{Map, Value};
use sluice_model::schema::{Field, FieldError, Schema};
use std::sync::Arc;
use token::{Claim, Times};
use verified::VerifiedTokens;

#[derive(Debug, Deserialize)]
struct Config {
    /// Query arguments that may carry the token.
    uri_param_names: Vec<String>,
    /// Cookies that may carry the token.
    cookie_names: Vec<String>,
    /// Headers that may carry `Bearer <token>`.
    header_names: Vec<String>,
    /// The claim (or, failing that, header field) naming the credential's `key`.
    key_claim_name: String,
    /// HS* secrets are base64url-encoded in the credential.
    secret_is_base64: bool,
    claims_to_verify: Option<Vec<Claim>>,
    /// Consumer (id or username) used when authentication fails, instead of a 401.
    anonymous: Option<String>,
    /// Authenticate CORS preflight (OPTIONS) requests too.
    run_on_preflight: bool,
    /// When > 0: `exp` may be at most this many seconds ahead.
    maximum_expiration: f64,
    realm: Option<String>,
}

pub fn builtin() -> Builtin {
    let set = |default: Value| Field::set(Field::string()).default(default);
    let config = Schema::new(vec![
        ("uri_param_names", set(serde_json::json!(["jwt"]))),
        ("cookie_names", set(serde_json::json!([]))),
        ("key_claim_name", Field::string().default("iss")),
        (
            "secret_is_base64",
            Field::boolean().required().default(false),
        ),
        (
            "claims_to_verify",
            Field::set(Field::string().one_of(&["exp", "nbf"])),
        ),
        ("anonymous", Field::string()),
        (
            "run_on_preflight",
            Field::boolean().required().default(true),
        ),
        (
            "maximum_expiration",
            Field::number().default(0).between(0.0, 31536000.0),
        ),
        ("header_names", set(serde_json::json!(["authorization"]))),
        ("realm", Field::string()),
    ])
    .with_check(check);
    Builtin::new("jwt", 1450, config, build).no_consumer()
}

/// Kong's conditional: a `maximum_expiration` needs `exp` among the `claims_to_verify` (when those are set).
fn check(m: &Map<String, Value>) -> Result<(), Vec<FieldError>> {
    let max = m["maximum_expiration"].as_f64().unwrap_or(0.0);
    let Some(claims) = m["claims_to_verify"].as_array() else {
        return Ok(());
    };
    if max > 0.0 && !claims.iter().any(|c| c == "exp") {
        return Err(vec![
            FieldError::new("claims_to_verify", "expected to contain: exp"),
            FieldError::plugin_check(
                "failed conditional validation given value of field 'config.maximum_expiration'",
            ),
        ]);
    }
    Ok(())
}

fn build(_: &BuildCtx<'_>, entity: &sluice_model::Plugin) -> Result<Arc<dyn Plugin>, String> {
    let config: Config = typed_config(entity)?;
    let header_names = config
        .header_names
        .iter()
        .filter_map(|n| http::HeaderName::from_bytes(n.to_ascii_lowercase().as_bytes()).ok())
        .collect();
    let base = match &config.realm {
        Some(realm) => format!("Bearer realm=\"{realm}\""),
        None => "Bearer".to_string(),
    };
    let with_error = format!("{base} error=\"invalid_token\"");
    Ok(register(Jwt {
        config,
        header_names,
        www_authenticate: [base, with_error],
        verified: VerifiedTokens::default(),
    }))
}

struct Jwt {
    config: Config,
    /// `header_names` as header names (names that cannot be one are left out), made once per config.
    header_names: Vec<http::HeaderName>,
    /// Kong's two `WWW-Authenticate` values: without a token, and for a bad one.
    www_authenticate: [String; 2],
    /// The tokens this plugin verified, per worker and snapshot.
    verified: VerifiedTokens,
}

/// Seconds since the epoch, whole, as nginx's clock.
fn now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs() as f64)
}

/// Why a request was not authenticated; [`Jwt::response`] makes Kong's 401 of each.
enum Denied {
    /// No token: "Unauthorized", with the challenge without an error.
    NoToken,
    /// Kong's message for a bad token.
    Token(String),
    /// Kong's claim errors, e.g. `{"exp":"token expired"}`.
    Claims(Vec<(&'static str, &'static str)>),
    /// The credential's consumer is gone (no challenge).
    NoConsumer(String),
}

impl Jwt {
    /// Kong's 401 for `denied`: `{"message": ...}` or the claim errors, with `WWW-Authenticate`.
    fn response(&self, denied: Denied) -> PluginResponse {
        let status = http::StatusCode::UNAUTHORIZED;
        let (response, challenge) = match denied {
            Denied::NoToken => (PluginResponse::message(status, "Unauthorized"), 0),
            Denied::Token(message) => (PluginResponse::message(status, &message), 1),
            Denied::Claims(errors) => {
                let body: Map<String, Value> = errors
                    .into_iter()
                    .map(|(k, v)| (k.to_string(), Value::from(v)))
                    .collect();
                let body = Value::Object(body).to_string().into();
                (PluginResponse::json(status, body), 1)
            }
            Denied::NoConsumer(message) => return PluginResponse::message(status, &message),
        };
        response.with_header(
            http::header::WWW_AUTHENTICATE,
            &self.www_authenticate[challenge],
        )
    }

    /// Kong's `do_authentication`: the credential and its consumer, or why not.
    fn authenticate<'s>(
        &self,
        ctx: &RequestCtx<'s>,
    ) -> Result<(&'s JwtCredential, &'s sluice_model::Consumer), Denied> {
        let c = &self.config;
        let found = find::tokens(
            ctx.request.uri.query(),
            &ctx.request.headers,
            &c.uri_param_names,
            &c.cookie_names,
            &self.header_names,
        );
        let bad = |message: &str| Denied::Token(message.to_string());
        let text = match found {
            Tokens::None => return Err(Denied::NoToken),
            Tokens::Many => return Err(bad("Multiple tokens provided")),
            Tokens::One(Found::Flag) => return Err(bad("Unrecognizable token")),
            Tokens::One(Found::Text(text)) => text,
        };
        let (cred, times) = self.verified_token(ctx, &text)?;
        let now = now();
        let which = c.claims_to_verify.as_deref().unwrap_or(&[]);
        let errors = token::verify_claims(times, which, now);
        if !errors.is_empty() {
            return Err(Denied::Claims(errors));
        }
        let max = c.maximum_expiration;
        if max > 0.0 && !token::within_maximum(times, max, now) {
            let exceeded = ("exp", "exceeds maximum allowed expiration");
            return Err(Denied::Claims(vec![exceeded]));
        }
        match ctx.credentials.consumer(&cred.secret.consumer.id) {
            Some(consumer) => Ok((cred, consumer)),
            None => Err(Denied::NoConsumer(format!(
                "Could not find consumer for '{}={}'",
                c.key_claim_name, cred.secret.key
            ))),
        }
    }

    /// The credential `text` verifies as, with its time claims: kept from an earlier request of this
    /// worker on this snapshot ([`VerifiedTokens`]), else decoded and checked ([`Jwt::verify_token`]).
    fn verified_token<'s>(
        &self,
        ctx: &RequestCtx<'s>,
        text: &str,
    ) -> Result<(&'s JwtCredential, Times), Denied> {
        let credentials = ctx.credentials;
        let kept = self.verified.get(credentials.id(), text, |key, times| {
            credentials.jwt(key).map(|cred| (cred, times))
        });
        if let Some(kept) = kept {
            return Ok(kept);
        }
        let (cred, times) = self.verify_token(ctx, text)?;
        let key = &cred.secret.key;
        self.verified.insert(credentials.id(), text, key, times);
        Ok((cred, times))
    }

    /// Kong's checks of the token itself, in its order: its form, its key claim, the credential that key
    /// names, the algorithm and the signature.
    fn verify_token<'s>(
        &self,
        ctx: &RequestCtx<'s>,
        text: &str,
    ) -> Result<(&'s JwtCredential, Times), Denied> {
        let bad = |message: &str| Denied::Token(message.to_string());
        let claim = &self.config.key_claim_name;
        let jwt =
            token::decode(text, claim).map_err(|e| Denied::Token(format!("Bad token; {e}")))?;
        let key = match &jwt.key {
            None => return Err(Denied::Token(format!("No mandatory '{claim}' in claims"))),
            Some(Value::String(s)) if s.is_empty() => {
                return Err(Denied::Token(format!("Invalid '{claim}' in claims")))
            }
            Some(v) => v.as_str(),
        };
        let Some(cred) = key.and_then(|k| ctx.credentials.jwt(k)) else {
            let message = format!("No credentials found for given '{claim}'");
            return Err(Denied::Token(message));
        };
        if jwt.alg != cred.alg {
            return Err(bad("Invalid algorithm"));
        }
        match cred.verify(
            jwt.signed.as_bytes(),
            &jwt.signature,
            self.config.secret_is_base64,
        ) {
            Ok(()) => {}
            Err(Rejected::NoKey) => return Err(bad("Invalid key/secret")),
            Err(Rejected::Signature) => return Err(bad("Invalid signature")),
        }
        Ok((cred, jwt.times))
    }

    fn access(&self, ctx: &mut RequestCtx<'_>) -> Flow {
        let anonymous = self.config.anonymous.as_deref();
        if auth::skips(ctx, self.config.run_on_preflight, anonymous) {
            return Flow::Continue;
        }
        match self.authenticate(ctx) {
            Ok((cred, consumer)) => {
                let credential = CredentialRef {
                    id: cred.secret.id,
                    plugin: "jwt",
                };
                auth::identify_as(ctx, consumer, credential, &cred.secret.key);
                Flow::Continue
            }
            Err(denied) => {
                let response = self.response(denied);
                auth::reject_or_anonymous(ctx, anonymous, response)
            }
        }
    }
}

/// This plugin's phases: each handler is registered here, next to where it is implemented.
fn register(plugin: Jwt) -> Arc<dyn Plugin> {
    Registered::new("jwt", plugin).access(Jwt::access).build()
}

#[cfg(test)]
mod tests;
