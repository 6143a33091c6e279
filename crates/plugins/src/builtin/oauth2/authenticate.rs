//! The token check on every other request: the access token from the auth header (`Bearer`/`Token`
//! scheme, or the bare value) or an `access_token` parameter; looked up in this node's short cache, else in
//! the database (deferred); then Kong's checks (service, `global_credentials`, expiry), its 401 bodies and
//! `WWW-Authenticate` values, and the consumer identified with `X-Authenticated-Scope` /
//! `X-Authenticated-Userid` upstream. `anonymous` makes failures fall back to that consumer.

use super::super::auth;
use super::super::transform::form;
use super::config::Config;
use super::params::{self, Params};
use super::store::Token;
use super::OAuth2;
use crate::ctx::{CredentialRef, RequestCtx};
use crate::plugin::Flow;
use http::{HeaderName, HeaderValue, StatusCode};
use std::sync::Arc;

const SCOPE: HeaderName = HeaderName::from_static("x-authenticated-scope");
const USERID: HeaderName = HeaderName::from_static("x-authenticated-userid");
const INVALID: &str = "The access token is invalid or has expired";

pub fn authenticate(p: &OAuth2, ctx: &mut RequestCtx<'_>) -> Flow {
    ctx.request.headers.remove(SCOPE);
    ctx.request.headers.remove(USERID);
    let anonymous = p.config.anonymous.as_deref();
    if auth::already_authenticated(ctx, anonymous) {
        return Flow::Continue;
    }
    let Some(access_token) = access_token(p, ctx).filter(|t| !t.is_empty()) else {
        let challenge = params::bearer_challenge(p.config.realm.as_deref(), None);
        let missing = "The access token is missing";
        let refusal = params::refuse(
            StatusCode::UNAUTHORIZED,
            "invalid_request",
            missing,
            &challenge,
        );
        return auth::reject_or_anonymous(ctx, anonymous, refusal);
    };
    if let Some(token) = p.store.cached(&access_token) {
        return apply(&p.config, ctx, Some(token));
    }
    let (store, config) = (p.store.clone(), p.config.clone());
    Flow::Defer(Box::pin(async move {
        match store.by_access_token(access_token).await {
            Ok(found) => Flow::Then(Box::new(move |ctx| apply(&config, ctx, found))),
            Err(e) => Flow::Respond(super::failed(&e)),
        }
    }))
}

/// The token the request carries, removed from it with `hide_credentials`.
fn access_token(p: &OAuth2, ctx: &mut RequestCtx<'_>) -> Option<String> {
    if let Some(value) = ctx.request.headers.get(&p.auth_header) {
        let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
        let parts: Vec<&str> = value.split_whitespace().collect();
        let scheme = parts.first().map(|s| s.to_ascii_lowercase());
        if let ([_, token], Some("bearer" | "token")) = (parts.as_slice(), scheme.as_deref()) {
            let token = token.to_string();
            if p.config.hide_credentials {
                ctx.request.headers.remove(&p.auth_header);
            }
            return Some(token);
        }
        if p.config.hide_credentials {
            hide_parameter(ctx);
        }
        return Some(value);
    }
    let token = Params::of(ctx).text("access_token").map(String::from)?;
    if p.config.hide_credentials {
        hide_parameter(ctx);
    }
    Some(token)
}

/// Removes `access_token` from the query string, and from a urlencoded body (but for GET).
fn hide_parameter(ctx: &mut RequestCtx<'_>) {
    let mut query = form::parse(ctx.request.uri.query().unwrap_or(""));
    if query.remove("access_token").is_some() {
        let query = form::encode(&query);
        let path = ctx.request.uri.path();
        let target = match query.is_empty() {
            true => path.to_string(),
            false => format!("{path}?{query}"),
        };
        if let Ok(uri) = target.parse() {
            ctx.request.uri = uri;
        }
    }
    let is_form = form::ArgsBody::of(&ctx.request.headers) == Some(form::ArgsBody::Urlencoded);
    if ctx.request.method == http::Method::GET || !is_form {
        return;
    }
    if let Some(body) = ctx.body.take() {
        let mut fields = form::parse(&String::from_utf8_lossy(&body));
        ctx.body = Some(match fields.remove("access_token") {
            Some(_) => {
                ctx.request.headers.remove(http::header::CONTENT_LENGTH);
                form::encode(&fields).into()
            }
            None => body,
        });
    }
}

/// Why a token was not accepted.
enum Refused {
    /// Kong's usual 401 (the `anonymous` consumer may stand in).
    Invalid,
    /// A global token on a plugin without `global_credentials`: Kong's 401, whatever `anonymous` says.
    Global,
}

/// Kong's checks of a looked-up token against this route.
fn check(config: &Config, ctx: &RequestCtx<'_>, token: Option<&Token>) -> Result<(), Refused> {
    let token = token.ok_or(Refused::Invalid)?;
    let service = ctx.service.map(|s| s.id);
    if !config.global_credentials && token.service.is_none() {
        return Err(Refused::Global);
    }
    if token.service.is_some() && token.service != service {
        return Err(Refused::Invalid);
    }
    if token.expires_in > 0 && params::now() - token.created_at > token.expires_in {
        return Err(Refused::Invalid);
    }
    Ok(())
}

/// Identifies the token's consumer, or refuses.
fn apply(config: &Config, ctx: &mut RequestCtx<'_>, token: Option<Arc<Token>>) -> Flow {
    let realm = config.realm.as_deref();
    let challenge = params::bearer_challenge(realm, Some(("invalid_token", INVALID)));
    let refusal = |description: &str| {
        params::refuse(
            StatusCode::UNAUTHORIZED,
            "invalid_token",
            description,
            &challenge,
        )
    };
    let credentials = ctx.credentials;
    let found = check(config, ctx, token.as_deref()).map(|()| {
        let token = token.as_deref()?;
        let credential = credentials.oauth2_by_id(&token.credential)?;
        let consumer = credentials.consumer(&credential.consumer.id)?;
        Some((token, credential, consumer))
    });
    let (token, credential, consumer) = match found {
        Ok(Some(found)) => found,
        Err(Refused::Global) => {
            return Flow::Respond(refusal(
                "The access token is global, but the current plugin is configured without 'global_credentials'",
            ))
        }
        Ok(None) | Err(Refused::Invalid) => {
            let anonymous = config.anonymous.as_deref();
            return auth::reject_or_anonymous(ctx, anonymous, refusal(INVALID));
        }
    };
    let cred = CredentialRef {
        id: credential.id,
        plugin: "oauth2",
    };
    auth::identify_as(ctx, consumer, cred, &credential.client_id);
    for (name, value) in [(SCOPE, &token.scope), (USERID, &token.authenticated_userid)] {
        if let Some(v) = value.as_deref().and_then(|v| HeaderValue::from_str(v).ok()) {
            ctx.request.headers.insert(name, v);
        }
    }
    Flow::Continue
}
