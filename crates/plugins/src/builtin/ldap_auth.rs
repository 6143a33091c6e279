//! `ldap-auth` (priority 1200, access): `Proxy-Authorization` or `Authorization: <header_type>
//! base64(username:password)` is checked by a simple bind to an LDAP server as
//! `<attribute>=<username>,<base_dn>`. There is no consumer: the LDAP user is the credential, named upstream
//! by `X-Credential-Identifier`. Verdicts are cached for `cache_ttl` (`ldap_auth/cache.rs`); on a miss the
//! bind runs in a deferred future (`ldap_auth/bind.rs`), so the worker is never blocked on the server.

mod bind;
mod cache;
mod given;
mod pool;
#[cfg(test)]
mod tests;

use super::auth;
use crate::ctx::{CredentialRef, RequestCtx};
use crate::logging::address;
use crate::plugin::{Flow, Plugin, Registered};
use crate::registry::{typed_config, BuildCtx, Builtin};
use crate::response::PluginResponse;
use given::{Cached, Given};
use serde::Deserialize;
use serde_json::{Map, Value};
use sluice_model::schema::{Field, FieldError, Schema};
use std::sync::Arc;
use std::time::Duration;

#[derive(Debug, Deserialize)]
struct Config {
    ldap_host: String,
    ldap_port: u16,
    /// LDAP over TLS from the first byte.
    ldaps: bool,
    /// The StartTLS extended operation on a plain connection.
    start_tls: bool,
    /// Check the server's certificate against the system's CAs.
    verify_ldap_host: bool,
    base_dn: String,
    /// The attribute naming the user in its DN, e.g. `uid` or `cn`.
    attribute: String,
    /// Seconds a verdict is kept (0: for good, as in Kong).
    cache_ttl: f64,
    /// Remove `Authorization` and `Proxy-Authorization` before proxying.
    hide_credentials: bool,
    /// Milliseconds for the connection and for the bind.
    timeout: Option<f64>,
    /// Milliseconds a connection is kept for the next bind (0: for good).
    keepalive: Option<f64>,
    /// Consumer (id or username) used when authentication fails, instead of a 401.
    anonymous: Option<String>,
    /// The scheme expected before the credentials (case-insensitive).
    header_type: Option<String>,
    realm: Option<String>,
}

pub fn builtin() -> Builtin {
    let config = Schema::new(vec![
        ("ldap_host", address::host().required()),
        ("ldap_port", address::port().required().default(389)),
        ("ldaps", Field::boolean().required().default(false)),
        ("start_tls", Field::boolean().required().default(false)),
        (
            "verify_ldap_host",
            Field::boolean().required().default(false),
        ),
        ("base_dn", Field::string().required()),
        ("attribute", Field::string().required()),
        ("cache_ttl", Field::number().required().default(60)),
        (
            "hide_credentials",
            Field::boolean().required().default(false),
        ),
        ("timeout", Field::number().default(10000)),
        ("keepalive", Field::number().default(60000)),
        ("anonymous", Field::string()),
        ("header_type", Field::string().default("ldap")),
        ("realm", Field::string()),
    ])
    .with_check(check);
    Builtin::new("ldap-auth", 1200, config, build).no_consumer()
}

/// Kong's entity check: `ldaps` and `start_tls` exclude each other.
fn check(m: &Map<String, Value>) -> Result<(), Vec<FieldError>> {
    match (m.get("ldaps"), m.get("start_tls")) {
        (Some(Value::Bool(true)), Some(Value::Bool(true))) => Err(vec![
            FieldError::new("start_tls", "value must be false"),
            FieldError::entity_check("'ldaps' and 'start_tls' cannot be enabled simultaneously"),
        ]),
        _ => Ok(()),
    }
}

fn build(_: &BuildCtx<'_>, entity: &sluice_model::Plugin) -> Result<Arc<dyn Plugin>, String> {
    let inner = Inner::new(typed_config(entity)?)?;
    Ok(register(LdapAuth(Arc::new(inner))))
}

struct LdapAuth(Arc<Inner>);

/// Everything a request needs, shared with its deferred bind.
struct Inner {
    target: bind::Target,
    attribute: String,
    /// `,<base_dn>`.
    dn_suffix: String,
    /// Kong's cache key text up to the username.
    key_prefix: String,
    ttl: Option<Duration>,
    /// `header_type` in lower case.
    header_type: String,
    www_authenticate: String,
    hide_credentials: bool,
    anonymous: Option<String>,
}

impl Inner {
    /// What one plugin instance needs, made once from its config.
    fn new(c: Config) -> Result<Inner, String> {
        let tls = match c.ldaps || c.start_tls {
            true => Some(sluice_tls::client_config_without_alpn(c.verify_ldap_host)?),
            false => None,
        };
        let header_type = c.header_type.as_deref().unwrap_or("ldap");
        // Kong capitalizes only the default scheme in its challenge.
        let scheme = if header_type == "ldap" {
            "LDAP"
        } else {
            header_type
        };
        let www_authenticate = match &c.realm {
            Some(realm) => format!("{scheme} realm=\"{realm}\""),
            None => scheme.to_string(),
        };
        let ttl = (c.cache_ttl != 0.0).then(|| Duration::from_secs_f64(c.cache_ttl.max(0.0)));
        let key_prefix = format!(
            "{}:{}:{}:{}:{}:",
            c.ldap_host.to_lowercase(),
            c.ldap_port,
            c.base_dn,
            c.attribute,
            c.cache_ttl.max(0.0) as u64
        );
        // Kong pools StartTLS connections apart from plain ones on the same port.
        let mode = match (c.ldaps, c.start_tls) {
            (true, _) => "ldaps",
            (false, true) => "starttls",
            (false, false) => "ldap",
        };
        let pool = format!(
            "{}:{}:{mode}:{}",
            c.ldap_host, c.ldap_port, c.verify_ldap_host
        );
        // Without `keepalive`, nginx keeps an idle connection 60 s; 0 keeps it for good.
        let keepalive = match c.keepalive.unwrap_or(60_000.0) {
            0.0 => None,
            ms => Some(Duration::from_secs_f64(ms.max(0.0) / 1000.0)),
        };
        // Without a `timeout`, Kong's sockets wait 60 s.
        let timeout = Duration::from_secs_f64(c.timeout.unwrap_or(60_000.0).max(1.0) / 1000.0);
        Ok(Inner {
            target: bind::Target {
                host: c.ldap_host,
                port: c.ldap_port,
                ldaps: c.ldaps,
                start_tls: c.start_tls,
                verify: c.verify_ldap_host,
                timeout,
                tls,
                keepalive,
                pool,
            },
            dn_suffix: format!(",{}", c.base_dn),
            attribute: c.attribute,
            key_prefix,
            ttl,
            header_type: header_type.to_ascii_lowercase(),
            www_authenticate,
            hide_credentials: c.hide_credentials,
            anonymous: c.anonymous,
        })
    }
}

impl Inner {
    /// The first of `givens` the server (or the cache) accepts; Err when the server cannot answer.
    async fn verify(&self, givens: Vec<Given>) -> Result<Option<Given>, String> {
        for given in givens {
            let ok = match cache::get(&given.key) {
                Some(ok) => ok,
                None => {
                    let dn = format!("{}={}{}", self.attribute, given.username, self.dn_suffix);
                    let ok = bind::bind(&self.target, &dn, &given.password).await?;
                    cache::put(given.key, ok, self.ttl);
                    ok
                }
            };
            if ok {
                return Ok(Some(given));
            }
        }
        Ok(None)
    }

    /// Authenticated: the credential is the LDAP user; Kong's consumer headers are removed.
    fn accept(&self, ctx: &mut RequestCtx<'_>, given: &Given) -> Flow {
        if self.hide_credentials {
            ctx.request.headers.remove(http::header::AUTHORIZATION);
            ctx.request
                .headers
                .remove(http::header::PROXY_AUTHORIZATION);
        }
        let mut id = [0u8; 16];
        id.copy_from_slice(&given.key[..16]);
        let credential = CredentialRef {
            id: uuid::Uuid::from_bytes(id),
            plugin: "ldap-auth",
        };
        auth::identify_without_consumer(ctx, credential, &given.username);
        Flow::Continue
    }

    /// Not authenticated: the `anonymous` consumer, else Kong's 401 with its challenge.
    fn reject(&self, ctx: &mut RequestCtx<'_>) -> Flow {
        let unauthorized = PluginResponse::message(http::StatusCode::UNAUTHORIZED, "Unauthorized")
            .with_header(http::header::WWW_AUTHENTICATE, &self.www_authenticate);
        auth::reject_or_anonymous(ctx, self.anonymous.as_deref(), unauthorized)
    }
}

impl LdapAuth {
    fn access(&self, ctx: &mut RequestCtx<'_>) -> Flow {
        let inner = &self.0;
        if auth::already_authenticated(ctx, inner.anonymous.as_deref()) {
            return Flow::Continue;
        }
        let givens = match inner.cached(&ctx.request.headers) {
            Cached::Accepted(given) => return inner.accept(ctx, &given),
            Cached::Refused => return inner.reject(ctx),
            Cached::Unknown(givens) => givens,
        };
        let inner = self.0.clone();
        Flow::Defer(Box::pin(async move {
            match inner.verify(givens).await {
                Ok(Some(given)) => Flow::Then(Box::new(move |ctx| inner.accept(ctx, &given))),
                Ok(None) => Flow::Then(Box::new(move |ctx| inner.reject(ctx))),
                Err(error) => {
                    // Kong fails the request, `anonymous` or not.
                    tracing::error!(%error, "ldap-auth could not reach the LDAP server");
                    Flow::Respond(PluginResponse::message(
                        http::StatusCode::INTERNAL_SERVER_ERROR,
                        "An unexpected error occurred",
                    ))
                }
            }
        }))
    }
}

/// This plugin's phases: each handler is registered here, next to where it is implemented.
fn register(plugin: LdapAuth) -> Arc<dyn Plugin> {
    Registered::new("ldap-auth", plugin)
        .access(LdapAuth::access)
        .build()
}
