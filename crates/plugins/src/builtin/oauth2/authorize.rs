//! `POST …/oauth2/authorize`: the application's backend, having logged the user in, asks for an
//! authorization code (`response_type=code`) or a token (`response_type=token`, the implicit grant) for
//! one of its clients. Kong's checks in its order; the answer is `{"redirect_uri": …}` with the code or
//! token (or the error) added to the client's redirect URI, or the bare parameters when no URI is known.

use super::grant::{self, Issue};
use super::params::{self, error, is_error, now, Params};
use super::store::Code;
use super::OAuth2;
use crate::ctx::RequestCtx;
use crate::plugin::Flow;
use http::StatusCode;
use serde_json::{Map, Value};
use sluice_model::declarative::random_secret;
use uuid::Uuid;

/// What is left to do once the request is accepted.
enum Pending {
    Code(Code),
    Token(Issue),
}

pub fn authorize(p: &OAuth2, ctx: &mut RequestCtx<'_>) -> Flow {
    let params = Params::of(ctx);
    let state = params.raw("state").cloned();
    let (mut answer, redirect, pending) = check(p, ctx, &params);
    let Some(pending) = pending else {
        return Flow::Respond(finish(answer, state, redirect.as_deref(), false));
    };
    let (store, config) = (p.store.clone(), p.config.clone());
    Flow::Defer(Box::pin(async move {
        let implicit = matches!(pending, Pending::Token(_));
        let done = match pending {
            Pending::Code(code) => {
                let value = code.code.clone();
                store.db.save_code(code, 300).await.map(|()| {
                    answer.insert("code".into(), value.into());
                    answer
                })
            }
            Pending::Token(issue) => grant::issue(&store, &config, issue).await,
        };
        match done {
            Ok(answer) => Flow::Respond(finish(answer, state, redirect.as_deref(), implicit)),
            Err(e) => Flow::Respond(super::failed(&e)),
        }
    }))
}

/// Kong's checks: the answer so far (an error, or empty), the redirect URI to answer with, and the write
/// an accepted request needs.
fn check(
    p: &OAuth2,
    ctx: &RequestCtx<'_>,
    params: &Params,
) -> (Map<String, Value>, Option<String>, Option<Pending>) {
    let config = &p.config;
    if !grant::https(ctx, config.accept_http_if_already_terminated) {
        return (error("access_denied", "You must use HTTPS"), None, None);
    }
    if !p.provision_key_matches(params) {
        let e = error("invalid_provision_key", "Invalid provision_key");
        return (e, None, None);
    }
    let Some(userid) = params.filled("authenticated_userid") else {
        let e = error(
            "invalid_authenticated_userid",
            "Missing authenticated_userid parameter",
        );
        return (e, None, None);
    };
    let response_type = params.text("response_type");
    let mut answer = Map::new();
    let code_flow = response_type == Some("code") && config.enable_authorization_code;
    let implicit = response_type == Some("token") && config.enable_implicit_grant;
    if !(code_flow || implicit) {
        answer = error("unsupported_response_type", "Invalid response_type");
    }
    let scope = params::scope(params, config).unwrap_or_else(|e| {
        answer = e;
        None
    });
    let client = params
        .text("client_id")
        .filter(|id| !id.is_empty())
        .and_then(|id| ctx.credentials.oauth2(id));
    let allowed = client.and_then(|c| c.redirect_uris.as_deref());
    let mut redirect = None;
    match allowed {
        None => answer = error("invalid_client", "Invalid client authentication"),
        Some(allowed) => {
            let first = allowed.first().cloned();
            let asked = params
                .text("redirect_uri")
                .map(String::from)
                .or(first.clone());
            if asked.as_ref().is_some_and(|a| allowed.contains(a)) {
                redirect = asked;
            } else {
                answer = error(
                    "invalid_request",
                    "Invalid redirect_uri that does not match with any redirect_uri created with the application",
                );
                redirect = first;
            }
        }
    }
    let challenge = grant::challenge(
        params.text("code_challenge"),
        params.text("code_challenge_method"),
    );
    let challenge = match (challenge, client) {
        (Err(e), _) => {
            answer = error("invalid_request", e);
            None
        }
        (Ok(None), Some(c)) if grant::requires_pkce(config, c, false) => {
            let description = format!("code_challenge is required for {} clients", c.client_type);
            answer = error("invalid_request", description);
            None
        }
        (Ok(challenge), _) => challenge,
    };
    let (Some(client), false) = (client, is_error(&answer)) else {
        return (answer, redirect, None);
    };
    let service = ctx.service.map(|s| s.id);
    let userid = Some(userid.to_string());
    let pending = match code_flow {
        true => Pending::Code(Code {
            id: Uuid::new_v4(),
            credential: client.id,
            service: service.filter(|_| !config.global_credentials),
            plugin: Some(p.plugin_id),
            code: random_secret(),
            authenticated_userid: userid,
            scope,
            challenge_method: challenge.as_ref().map(|(_, m)| m.to_string()),
            challenge: challenge.map(|(c, _)| c),
            created_at: now(),
        }),
        false => Pending::Token(Issue {
            service,
            credential: client.id,
            authenticated_userid: userid,
            scope,
            no_refresh: true,
            renews: None,
        }),
    };
    (answer, redirect, Some(pending))
}

/// The answer: 400 for an error, else 200; with a redirect URI, the parameters go into its query (into its
/// fragment for an issued implicit token), merged over what it already carries.
fn finish(
    mut answer: Map<String, Value>,
    state: Option<Value>,
    redirect: Option<&str>,
    implicit: bool,
) -> crate::response::PluginResponse {
    if let Some(state) = state {
        answer.insert("state".into(), state);
    }
    let status = match is_error(&answer) {
        true => StatusCode::BAD_REQUEST,
        false => StatusCode::OK,
    };
    let body = match redirect {
        Some(uri) => serde_json::json!({ "redirect_uri": with_params(uri, answer, implicit) }),
        None => Value::Object(answer),
    };
    params::reply(status, &body)
}

/// `uri` with `answer` merged into its query (or fragment), names in order as Kong encodes them.
pub(super) fn with_params(uri: &str, answer: Map<String, Value>, in_fragment: bool) -> String {
    let (rest, fragment) = uri.split_once('#').unwrap_or((uri, ""));
    let (base, query) = rest.split_once('?').unwrap_or((rest, ""));
    let target = if in_fragment { fragment } else { query };
    let mut merged = super::super::transform::form::parse(target);
    merged.extend(answer);
    merged.sort_keys();
    let encoded = super::super::transform::form::encode(&merged);
    let (query, fragment) = match in_fragment {
        true => (query.to_string(), encoded),
        false => (encoded, fragment.to_string()),
    };
    let mut out = base.to_string();
    if !query.is_empty() {
        out.push('?');
        out.push_str(&query);
    }
    if !fragment.is_empty() {
        out.push('#');
        out.push_str(&fragment);
    }
    out
}
