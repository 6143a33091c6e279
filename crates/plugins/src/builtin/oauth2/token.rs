//! `POST …/oauth2/token`: a client exchanges a grant for a token — an authorization code (with its PKCE
//! verifier), its own credentials, a user's (the password grant, vouched for by the provision key), or a
//! refresh token. Kong's checks in its order, each later failure replacing the earlier answer as in Kong;
//! a client that sent bad Basic credentials gets 401 with `WWW-Authenticate: Basic realm="OAuth2.0"`.

use super::grant::{self, Issue};
use super::params::{self, error, is_error, ClientAuth, Params};
use super::store::{Store, TokenKey};
use super::OAuth2;
use crate::ctx::RequestCtx;
use crate::plugin::Flow;
use crate::response::PluginResponse;
use http::StatusCode;
use serde_json::{Map, Value};
use sluice_model::OAuth2Credential;
use std::sync::Arc;
use uuid::Uuid;

/// A grant that passed the checks made without the database.
enum Grant {
    Code {
        code: Option<String>,
        verifier: Option<Value>,
        client: OAuth2Credential,
    },
    Refresh {
        refresh: Option<String>,
        client: OAuth2Credential,
    },
    Issue(Issue),
}

pub fn issue_token(p: &OAuth2, ctx: &mut RequestCtx<'_>) -> Flow {
    let params = Params::of(ctx);
    let state = params.raw("state").cloned();
    let mut basic = false;
    let grant = match check(p, ctx, &params, &mut basic) {
        Ok(grant) => grant,
        Err(answer) => return Flow::Respond(finish(answer, state, basic)),
    };
    let service = ctx.service.map(|s| s.id);
    let exchange = Exchange {
        store: p.store.clone(),
        config: p.config.clone(),
        plugin_id: p.plugin_id,
        service,
    };
    Flow::Defer(Box::pin(async move {
        match exchange.run(grant).await {
            Ok(answer) => Flow::Respond(finish(answer, state, basic)),
            Err(e) => Flow::Respond(super::failed(&e)),
        }
    }))
}

/// Kong's checks before the database: HTTPS, the grant type, the client and its secret, and each grant's
/// own parameters. `basic` is set when the answer must be a 401 Basic challenge.
fn check(
    p: &OAuth2,
    ctx: &RequestCtx<'_>,
    params: &Params,
    basic: &mut bool,
) -> Result<Grant, Map<String, Value>> {
    let config = &p.config;
    if !grant::https(ctx, config.accept_http_if_already_terminated) {
        return Err(error("access_denied", "You must use HTTPS"));
    }
    let grant_type = params.text("grant_type").unwrap_or_default();
    let mut answer = Map::new();
    let supported = match grant_type {
        "authorization_code" | "refresh_token" => true,
        "client_credentials" => config.enable_client_credentials,
        "password" => config.enable_password_grant,
        _ => false,
    };
    if !supported {
        answer = error("unsupported_grant_type", "Invalid grant_type");
    }
    let auth = ClientAuth::of(params, ctx, &p.auth_header);
    let client = auth
        .client_id
        .as_deref()
        .filter(|id| !id.is_empty())
        .and_then(|id| ctx.credentials.oauth2(id));
    let bad_client = |answer: &mut Map<String, Value>, basic: &mut bool| {
        *answer = error("invalid_client", "Invalid client authentication");
        *basic |= auth.from_header;
    };
    if grant_type != "client_credentials" {
        match client.and_then(|c| c.redirect_uris.as_deref()) {
            Some(allowed) => {
                let asked = params
                    .text("redirect_uri")
                    .or(allowed.first().map(|s| s.as_str()));
                if !asked.is_some_and(|a| allowed.iter().any(|u| u == a)) {
                    answer = error(
                        "invalid_request",
                        "Invalid redirect_uri that does not match with any redirect_uri created with the application",
                    );
                }
            }
            None => bad_client(&mut answer, basic),
        }
    }
    let secret = auth.client_secret.as_deref();
    match client {
        Some(c) if c.client_type == "confidential" && !p.secret_matches(c, secret) => {
            bad_client(&mut answer, basic)
        }
        Some(c) if c.client_type == "public" && secret.is_some_and(|s| !s.trim().is_empty()) => {
            answer = error(
                "invalid_request",
                "client_secret is disallowed for public clients",
            )
        }
        _ => {}
    }
    if is_error(&answer) {
        return Err(answer);
    }
    let invalid_client = || error("invalid_client", "Invalid client authentication");
    let issue = |userid: Option<&str>, no_refresh: bool, client: &OAuth2Credential| {
        Ok(Grant::Issue(Issue {
            service: ctx.service.map(|s| s.id),
            credential: client.id,
            authenticated_userid: userid.map(String::from),
            scope: params::scope(params, config)?,
            no_refresh,
            renews: None,
        }))
    };
    match grant_type {
        "authorization_code" => Ok(Grant::Code {
            code: params.text("code").map(String::from),
            verifier: params.raw("code_verifier").cloned(),
            client: client.ok_or_else(invalid_client)?.clone(),
        }),
        "refresh_token" => Ok(Grant::Refresh {
            refresh: params.text("refresh_token").map(String::from),
            client: client.ok_or_else(invalid_client)?.clone(),
        }),
        "client_credentials" => {
            let userid = params.text("authenticated_userid");
            if params.raw("authenticated_userid").is_some() && !p.provision_key_matches(params) {
                return Err(error("invalid_provision_key", "Invalid provision_key"));
            }
            issue(userid, true, client.ok_or_else(invalid_client)?)
        }
        _ => {
            if !p.provision_key_matches(params) {
                return Err(error("invalid_provision_key", "Invalid provision_key"));
            }
            let Some(userid) = params.filled("authenticated_userid") else {
                return Err(error(
                    "invalid_authenticated_userid",
                    "Missing authenticated_userid parameter",
                ));
            };
            issue(Some(userid), false, client.ok_or_else(invalid_client)?)
        }
    }
}

/// The database part of a token request.
struct Exchange {
    store: Arc<Store>,
    config: Arc<super::config::Config>,
    /// The plugin instance answering (a global code must come from it).
    plugin_id: Uuid,
    /// The route's service.
    service: Option<Uuid>,
}

impl Exchange {
    async fn run(self, grant: Grant) -> Result<Map<String, Value>, String> {
        let (config, plugin_id) = (&self.config, self.plugin_id);
        let own_service = self.service.filter(|_| !config.global_credentials);
        let wrong_service = |s: Option<Uuid>| own_service.is_some() && s != own_service;
        match grant {
            Grant::Issue(issue) => grant::issue(&self.store, config, issue).await,
            Grant::Code {
                code,
                verifier,
                client,
            } => {
                let found = match code {
                    Some(code) => self.store.db.code(code).await?,
                    None => None,
                };
                let invalid = || Ok(error("invalid_request", "Invalid code"));
                let Some(found) = found.filter(|c| !wrong_service(c.service)) else {
                    return invalid();
                };
                if found.credential != client.id {
                    return invalid();
                }
                if grant::requires_pkce(config, &client, found.challenge_method.is_some()) {
                    if let Err(e) =
                        grant::verify_pkce(verifier.as_ref(), found.challenge.as_deref())
                    {
                        return Ok(e);
                    }
                }
                let other_plugin = found.plugin.is_some_and(|id| id != plugin_id);
                if (config.global_credentials && other_plugin)
                    || !self.store.db.delete_code(found.id).await?
                {
                    return invalid();
                }
                let issue = Issue {
                    service: self.service,
                    credential: client.id,
                    authenticated_userid: found.authenticated_userid,
                    scope: found.scope,
                    no_refresh: false,
                    renews: None,
                };
                grant::issue(&self.store, config, issue).await
            }
            Grant::Refresh { refresh, client } => {
                let found = match refresh {
                    Some(r) => self.store.db.token(TokenKey::Refresh(r)).await?,
                    None => None,
                };
                let Some(old) = found.filter(|t| !wrong_service(t.service)) else {
                    return Ok(error("invalid_request", "Invalid refresh_token"));
                };
                if old.credential != client.id {
                    return Ok(error("invalid_client", "Invalid client authentication"));
                }
                let allowed = config.scopes.as_deref().unwrap_or_default();
                let scopes = old.scope.as_deref().unwrap_or_default();
                if scopes
                    .split_whitespace()
                    .any(|s| !allowed.iter().any(|a| a == s))
                {
                    return Ok(error("invalid_scope", "Scope mismatch"));
                }
                let issue = Issue {
                    service: self.service,
                    credential: client.id,
                    authenticated_userid: old.authenticated_userid.clone(),
                    scope: old.scope.clone(),
                    no_refresh: false,
                    renews: Some(old.clone()),
                };
                let answer = grant::issue(&self.store, config, issue).await?;
                if !config.reuse_refresh_token {
                    self.store.delete_token(&old).await?;
                }
                Ok(answer)
            }
        }
    }
}

/// 200 with the token, or the error: 400, or 401 with Kong's Basic challenge.
fn finish(mut answer: Map<String, Value>, state: Option<Value>, basic: bool) -> PluginResponse {
    if let Some(state) = state {
        answer.insert("state".into(), state);
    }
    let status = match (is_error(&answer), basic) {
        (false, _) => StatusCode::OK,
        (true, false) => StatusCode::BAD_REQUEST,
        (true, true) => StatusCode::UNAUTHORIZED,
    };
    let reply = params::reply(status, &Value::Object(answer));
    match basic {
        true => reply.with_header(http::header::WWW_AUTHENTICATE, "Basic realm=\"OAuth2.0\""),
        false => reply,
    }
}
