//! `basic-auth` (priority 1100): `Authorization: Basic` username and password identify the consumer.

use super::auth;
use crate::ctx::{CredentialRef, RequestCtx};
use crate::plugin::{Flow, Plugin, Registered};
use crate::registry::{typed_config, BuildCtx, Builtin};
use base64::Engine;
use serde::Deserialize;
use sha1::{Digest, Sha1};
use sluice_model::schema::{Field, Schema};
use std::sync::Arc;
use subtle::ConstantTimeEq;

#[derive(Debug, Deserialize)]
struct Config {
    /// Consumer (id or username) used when no valid credentials are given, instead of a 401.
    anonymous: Option<String>,
    /// Remove `Authorization` before proxying.
    hide_credentials: bool,
    /// The realm of `WWW-Authenticate`.
    realm: String,
}

pub fn builtin() -> Builtin {
    let config = Schema::new(vec![
        ("anonymous", Field::string()),
        ("hide_credentials", Field::boolean().default(false)),
        ("realm", Field::string().default("service")),
    ]);
    Builtin::new("basic-auth", 1100, config, build).no_consumer()
}

fn build(_: &BuildCtx<'_>, entity: &sluice_model::Plugin) -> Result<Arc<dyn Plugin>, String> {
    let config: Config = typed_config(entity)?;
    Ok(register(BasicAuth { config }))
}

struct BasicAuth {
    config: Config,
}

/// `(username, password)` from `Authorization` (or `Proxy-Authorization`), or None when absent or malformed.
fn credentials(headers: &http::HeaderMap) -> Option<(http::HeaderName, String, String)> {
    for name in [
        http::header::AUTHORIZATION,
        http::header::PROXY_AUTHORIZATION,
    ] {
        let Some(value) = headers.get(&name).and_then(|v| v.to_str().ok()) else {
            continue;
        };
        let (scheme, encoded) = value.trim().split_once(' ')?;
        if !scheme.eq_ignore_ascii_case("basic") {
            continue;
        }
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(encoded.trim())
            .ok()?;
        let text = String::from_utf8(decoded).ok()?;
        let (user, pass) = text.split_once(':')?;
        return Some((name, user.to_string(), pass.to_string()));
    }
    None
}

/// Kong's stored form: hex SHA-1 of the password followed by the consumer id.
/// Kong's stored form, `sha1(password .. consumer_id)` as lower-case hex, built on the stack (this runs on
/// every authenticated request).
fn hash(password: &str, consumer_id: &uuid::Uuid) -> [u8; 40] {
    let mut id = [0u8; uuid::fmt::Hyphenated::LENGTH];
    let mut h = Sha1::new();
    h.update(password.as_bytes());
    h.update(consumer_id.hyphenated().encode_lower(&mut id).as_bytes());
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut out = [0u8; 40];
    for (i, b) in h.finalize().iter().enumerate() {
        out[2 * i] = HEX[usize::from(b >> 4)];
        out[2 * i + 1] = HEX[usize::from(b & 15)];
    }
    out
}

impl BasicAuth {
    fn access(&self, ctx: &mut RequestCtx<'_>) -> Flow {
        let anonymous = self.config.anonymous.as_deref();
        if auth::already_authenticated(ctx, anonymous) {
            return Flow::Continue;
        }
        let deny = || auth::unauthorized("Unauthorized", "Basic", &self.config.realm);
        let Some((header, user, pass)) = credentials(&ctx.request.headers) else {
            return auth::reject_or_anonymous(ctx, anonymous, deny());
        };
        let store = ctx.credentials;
        let Some(found) = store.basic(&user) else {
            return auth::reject_or_anonymous(ctx, anonymous, deny());
        };
        let cred = &found.credential;
        let ok: bool = hash(&pass, &cred.consumer.id)
            .ct_eq(cred.password.as_bytes())
            .into();
        let consumer = store.consumer(&cred.consumer.id);
        let (true, Some(consumer)) = (ok, consumer) else {
            return auth::reject_or_anonymous(ctx, anonymous, deny());
        };
        if self.config.hide_credentials {
            ctx.request.headers.remove(header);
        }
        // Kong's basic-auth names the credential by its username in `X-Credential-Identifier`.
        let credential = CredentialRef {
            id: cred.id,
            plugin: "basic-auth",
        };
        auth::identify_known(ctx, consumer, credential, &found.identifier);
        Flow::Continue
    }
}

/// This plugin's phases: each handler is registered here, next to where it is implemented.
fn register(plugin: BasicAuth) -> Arc<dyn Plugin> {
    Registered::new("basic-auth", plugin)
        .access(BasicAuth::access)
        .build()
}
