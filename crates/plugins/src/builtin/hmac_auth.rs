//! `hmac-auth` (priority 1030, access): a request signed with an `hmacauth_credentials` secret identifies the
//! consumer. The client sends `Authorization` (or `Proxy-Authorization`) as `hmac username="..",
//! algorithm="..", headers="..", signature=".."`; the signature is the HMAC of the listed headers (Kong's
//! signing string, [`signature::signing_string`]), and `Date` or `X-Date` must be within `clock_skew`.
//! With `validate_request_body` the proxy buffers the body and its `Digest` must match.

mod keys;
mod signature;
#[cfg(test)]
mod tests;

use super::auth;
use crate::ctx::{CredentialRef, RequestCtx};
use crate::plugin::{Flow, Plugin, Registered};
use crate::registry::{typed_config, BuildCtx, Builtin};
use crate::response::PluginResponse;
use http::header::{AUTHORIZATION, PROXY_AUTHORIZATION};
use http::{HeaderName, StatusCode};
pub use keys::HmacCredential;
use serde::Deserialize;
use signature::{Algorithm, Params, ALGORITHMS};
use sluice_model::schema::{Field, Schema};
use sluice_model::{Consumer, HmacAuthCredential};
use std::sync::Arc;

/// Kong's 401 messages.
const UNAUTHORIZED: &str = "Unauthorized";
const NO_DATE: &str = "HMAC signature cannot be verified, a valid date or x-date header is required for HMAC Authentication";
const NOT_VALID: &str = "HMAC signature cannot be verified";
const NOT_SAME: &str = "HMAC signature does not match";

#[derive(Debug, Deserialize)]
struct Config {
    /// Remove the header that carried the signature before proxying.
    hide_credentials: bool,
    /// Seconds `Date`/`X-Date` may be away from now (replay window).
    clock_skew: Option<f64>,
    /// Consumer (id or username) used when authentication fails, instead of a 401.
    anonymous: Option<String>,
    /// Check the `Digest` header against the body (the proxy then buffers the request body).
    validate_request_body: bool,
    /// Headers every signature must list.
    enforce_headers: Option<Vec<String>>,
    /// Accepted algorithms.
    algorithms: Option<Vec<String>>,
    /// `WWW-Authenticate: hmac realm="<realm>"` on a 401 (plain `hmac` without it).
    realm: Option<String>,
}

pub fn builtin() -> Builtin {
    let config = Schema::new(vec![
        ("hide_credentials", Field::boolean().default(false)),
        ("clock_skew", Field::number().default(300).gt(0.0)),
        ("anonymous", Field::string()),
        ("validate_request_body", Field::boolean().default(false)),
        (
            "enforce_headers",
            Field::array(Field::string()).default(serde_json::json!([])),
        ),
        (
            "algorithms",
            Field::array(Field::string().one_of(ALGORITHMS)).default(serde_json::json!(ALGORITHMS)),
        ),
        ("realm", Field::string()),
    ]);
    Builtin::new("hmac-auth", 1030, config, build).no_consumer()
}

fn build(_: &BuildCtx<'_>, entity: &sluice_model::Plugin) -> Result<Arc<dyn Plugin>, String> {
    let c: Config = typed_config(entity)?;
    let algorithms = match &c.algorithms {
        Some(names) => names
            .iter()
            .filter_map(|n| Algorithm::from_name(n.as_bytes()))
            .collect(),
        None => ALGORITHMS
            .iter()
            .filter_map(|n| Algorithm::from_name(n.as_bytes()))
            .collect(),
    };
    let www_authenticate = match &c.realm {
        Some(realm) => format!("hmac realm=\"{realm}\""),
        None => "hmac".to_string(),
    };
    Ok(register(HmacAuth {
        hide_credentials: c.hide_credentials,
        clock_skew: c.clock_skew.unwrap_or(300.0),
        anonymous: c.anonymous,
        validate_request_body: c.validate_request_body,
        enforce_headers: c.enforce_headers.unwrap_or_default(),
        algorithms,
        www_authenticate,
    }))
}

/// The config as the requests use it: algorithms as a set of enums, the 401's header made once.
struct HmacAuth {
    hide_credentials: bool,
    clock_skew: f64,
    anonymous: Option<String>,
    validate_request_body: bool,
    enforce_headers: Vec<String>,
    algorithms: Vec<Algorithm>,
    www_authenticate: String,
}

/// Seconds since the epoch (Kong's `ngx.time()`).
fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl HmacAuth {
    fn access(&self, ctx: &mut RequestCtx<'_>) -> Flow {
        let anonymous = self.anonymous.as_deref();
        if auth::already_authenticated(ctx, anonymous) {
            return Flow::Continue;
        }
        match self.authenticate(ctx) {
            Ok((consumer, cred)) => {
                let credential = CredentialRef {
                    id: cred.id,
                    plugin: "hmac-auth",
                };
                auth::identify_as(ctx, consumer, credential, &cred.username);
                Flow::Continue
            }
            Err(message) => {
                let deny = PluginResponse::message(StatusCode::UNAUTHORIZED, message)
                    .with_header(http::header::WWW_AUTHENTICATE, &self.www_authenticate);
                auth::reject_or_anonymous(ctx, anonymous, deny)
            }
        }
    }

    /// Kong's checks in its order; the error is the 401's message. With `hide_credentials`, the header
    /// the parameters were taken from is removed once the date passed, whatever follows (as Kong does).
    fn authenticate<'s>(
        &self,
        ctx: &mut RequestCtx<'s>,
    ) -> Result<(&'s Consumer, &'s HmacAuthCredential), &'static str> {
        let headers = &ctx.request.headers;
        let proxy = headers.get(PROXY_AUTHORIZATION);
        let authorization = headers.get(AUTHORIZATION);
        if proxy.is_none() && authorization.is_none() {
            return Err(UNAUTHORIZED);
        }
        if !signature::date_within(headers, self.clock_skew, now()) {
            return Err(NO_DATE);
        }
        let (used, params) = match proxy.and_then(|v| Params::parse(v.as_bytes())) {
            Some(p) => (PROXY_AUTHORIZATION, Some(p)),
            None => (
                AUTHORIZATION,
                authorization.and_then(|v| Params::parse(v.as_bytes())),
            ),
        };
        let outcome = self.verify(params, ctx);
        self.hide(ctx, used);
        outcome
    }

    /// The parameters against the config, the credential and the request.
    fn verify<'s>(
        &self,
        params: Option<Params<'_>>,
        ctx: &RequestCtx<'s>,
    ) -> Result<(&'s Consumer, &'s HmacAuthCredential), &'static str> {
        let params = params.ok_or(NOT_VALID)?;
        let enforced = self
            .enforce_headers
            .iter()
            .all(|h| params.header_names().any(|n| n == h.as_bytes()));
        let allowed =
            Algorithm::from_name(params.algorithm).filter(|a| self.algorithms.contains(a));
        let (true, Some(algorithm)) = (enforced, allowed) else {
            return Err(NOT_VALID);
        };
        let credentials = ctx.credentials;
        let keyed = std::str::from_utf8(params.username)
            .ok()
            .and_then(|u| credentials.hmac(u))
            .ok_or(NOT_VALID)?;
        let data = signature::signing_string(&params, &ctx.request);
        let mut decoded = [0; signature::LONGEST_SIGNATURE];
        let signed = signature::decode_signature(params.signature, &mut decoded)
            .is_some_and(|sig| keyed.verify(algorithm, &data, sig));
        let body = ctx.body.as_deref().unwrap_or_default();
        if !signed
            || (self.validate_request_body
                && !signature::digest_matches(&ctx.request.headers, body))
        {
            return Err(NOT_SAME);
        }
        let cred = &keyed.credential;
        let consumer = credentials.consumer(&cred.consumer.id).ok_or(NOT_VALID)?;
        Ok((consumer, cred))
    }

    fn hide(&self, ctx: &mut RequestCtx<'_>, used: HeaderName) {
        if self.hide_credentials {
            ctx.request.headers.remove(used);
        }
    }
}

/// This plugin's phases: each handler is registered here, next to where it is implemented.
fn register(plugin: HmacAuth) -> Arc<dyn Plugin> {
    let reads_body = plugin.validate_request_body;
    Registered::new("hmac-auth", plugin)
        .access(HmacAuth::access)
        .reads_request_body(reads_body)
        .build()
}
