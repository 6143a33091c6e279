//! `oauth2` (priority 1400, access; DB mode only, as in Kong): an OAuth 2.0 authorization server on the
//! route's paths and the bearer-token check in front of the service.
//!
//! A request whose path ends in `/oauth2/authorize` or `/oauth2/token` (a trailing slash allowed) is
//! answered by the plugin: [`authorize`] (authorization code, implicit grant) and [`token`] (authorization
//! code with PKCE, client credentials, password, refresh token). Any other request must carry a token
//! ([`authenticate`]): the consumer of the token's `oauth2_credentials` application is identified, with
//! `X-Authenticated-Scope` and `X-Authenticated-Userid` upstream. Codes and tokens are runtime data kept
//! in the database through [`store::OAuth2Store`], never in the config snapshot.

mod authenticate;
mod authorize;
mod config;
mod grant;
mod params;
pub mod store;
#[cfg(test)]
mod tests;
mod token;

use crate::ctx::RequestCtx;
use crate::plugin::{Flow, Plugin, Registered};
use crate::registry::{typed_config, BuildCtx, Builtin};
use crate::response::PluginResponse;
use config::Config;
use http::{HeaderName, StatusCode};
use sluice_model::OAuth2Credential;
use std::sync::Arc;
use store::Store;
use subtle::ConstantTimeEq;
use uuid::Uuid;

/// `database`: the node has one (the plugin is refused otherwise, with Kong's message).
pub fn builtin(database: bool) -> Builtin {
    Builtin::new("oauth2", 1400, config::schema(database), build).no_consumer()
}

fn build(ctx: &BuildCtx<'_>, entity: &sluice_model::Plugin) -> Result<Arc<dyn Plugin>, String> {
    let config: Config = typed_config(entity)?;
    let store = ctx.state.oauth2_store().ok_or(config::NO_DATABASE)?;
    let name = config
        .auth_header_name
        .as_deref()
        .unwrap_or("authorization");
    let auth_header = HeaderName::from_bytes(name.to_ascii_lowercase().as_bytes())
        .map_err(|_| format!("auth_header_name: '{name}' is not a header name"))?;
    Ok(Registered::new(
        "oauth2",
        OAuth2 {
            config: Arc::new(config),
            plugin_id: entity.id,
            store,
            auth_header,
        },
    )
    .access(OAuth2::access)
    .reads_request_body_when(OAuth2::reads_body)
    .build())
}

struct OAuth2 {
    config: Arc<Config>,
    /// This instance's id (an authorization code names the plugin that issued it).
    plugin_id: Uuid,
    store: Arc<Store>,
    /// `auth_header_name`, as a header name.
    auth_header: HeaderName,
}

/// The endpoints, by the suffix of the request path.
#[derive(Clone, Copy)]
enum Endpoint {
    Token,
    Authorize,
}

impl Endpoint {
    fn of(path: &str) -> Option<Endpoint> {
        let path = path.strip_suffix('/').unwrap_or(path);
        if path.ends_with("/oauth2/token") {
            Some(Endpoint::Token)
        } else if path.ends_with("/oauth2/authorize") {
            Some(Endpoint::Authorize)
        } else {
            None
        }
    }

    /// Kong's name of the endpoint in its 405 message.
    fn name(self) -> &'static str {
        match self {
            Endpoint::Token => "token",
            Endpoint::Authorize => "authorization",
        }
    }
}

impl OAuth2 {
    /// Whether the request's body holds parameters the plugin reads: those of a POST, PUT or PATCH with a
    /// urlencoded or JSON body ([`params::Params::of`]), on an endpoint or without the auth header (a token
    /// is looked for in the parameters only then, as Kong's `parse_access_token`). Other bodies stream to
    /// the upstream unread.
    fn reads_body(&self, req: &http::request::Parts) -> bool {
        use http::Method;
        matches!(req.method, Method::POST | Method::PUT | Method::PATCH)
            && super::transform::form::ArgsBody::of(&req.headers).is_some()
            && (Endpoint::of(req.uri.path()).is_some()
                || !req.headers.contains_key(&self.auth_header))
    }

    fn access(&self, ctx: &mut RequestCtx<'_>) -> Flow {
        let Some(endpoint) = Endpoint::of(ctx.request.uri.path()) else {
            return authenticate::authenticate(self, ctx);
        };
        if ctx.request.method != http::Method::POST {
            let description = format!(
                "The HTTP method {} is invalid for the {} endpoint",
                ctx.request.method,
                endpoint.name()
            );
            let realm = self.config.realm.as_deref();
            let challenge = params::bearer_challenge(realm, Some(("invalid_method", &description)));
            return Flow::Respond(params::refuse(
                StatusCode::METHOD_NOT_ALLOWED,
                "invalid_method",
                &description,
                &challenge,
            ));
        }
        match endpoint {
            Endpoint::Token => token::issue_token(self, ctx),
            Endpoint::Authorize => authorize::authorize(self, ctx),
        }
    }

    /// The request carries this plugin's `provision_key` (compared in constant time).
    fn provision_key_matches(&self, params: &params::Params) -> bool {
        match (&self.config.provision_key, params.text("provision_key")) {
            (Some(key), Some(given)) => bool::from(key.as_bytes().ct_eq(given.as_bytes())),
            _ => false,
        }
    }

    /// A confidential client's secret: hashed (`hash_secret`) or compared in constant time.
    fn secret_matches(&self, client: &OAuth2Credential, given: Option<&str>) -> bool {
        let Some(given) = given else {
            return false;
        };
        match client.hash_secret {
            true => sluice_model::oauth2_secret::verify(given, &client.client_secret),
            false => bool::from(client.client_secret.as_bytes().ct_eq(given.as_bytes())),
        }
    }
}

/// Kong's answer when the database fails: 500, the cause logged.
fn failed(cause: &str) -> PluginResponse {
    tracing::error!(error = cause, "oauth2: the database failed");
    PluginResponse::message(
        StatusCode::INTERNAL_SERVER_ERROR,
        "An unexpected error occurred",
    )
}
