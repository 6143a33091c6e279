//! What the authentication plugins share: identifying the consumer, Kong's upstream headers, `anonymous`.

use crate::credentials::{id_value, ConsumerHeaders};
use crate::ctx::{CredentialRef, RequestCtx};
use crate::plugin::Flow;
use crate::response::PluginResponse;
use http::{HeaderName, HeaderValue, StatusCode};
use sluice_model::Consumer;

const CONSUMER_ID: HeaderName = HeaderName::from_static("x-consumer-id");
const CONSUMER_CUSTOM_ID: HeaderName = HeaderName::from_static("x-consumer-custom-id");
const CONSUMER_USERNAME: HeaderName = HeaderName::from_static("x-consumer-username");
const CREDENTIAL_IDENTIFIER: HeaderName = HeaderName::from_static("x-credential-identifier");
const ANONYMOUS_CONSUMER: HeaderName = HeaderName::from_static("x-anonymous-consumer");

/// Headers the gateway sets upstream after authentication (client-sent copies are removed first).
const CONSUMER_HEADERS: [HeaderName; 5] = [
    CONSUMER_ID,
    CONSUMER_CUSTOM_ID,
    CONSUMER_USERNAME,
    CREDENTIAL_IDENTIFIER,
    ANONYMOUS_CONSUMER,
];

fn set(ctx: &mut RequestCtx<'_>, name: HeaderName, value: &str) {
    if let Ok(v) = HeaderValue::from_str(value) {
        ctx.request.headers.insert(name, v);
    }
}

/// Removes client-sent copies of Kong's consumer headers. One pass over the request's names, which
/// rarely holds any of them, instead of a hash of each of the five names.
fn clear_consumer_headers(headers: &mut http::HeaderMap) {
    if headers.keys().any(|n| CONSUMER_HEADERS.contains(n)) {
        for h in CONSUMER_HEADERS {
            headers.remove(h);
        }
    }
}

/// Marks the request as made by `consumer` with `credential` and sets Kong's upstream headers.
pub fn identify<'s>(
    ctx: &mut RequestCtx<'s>,
    consumer: &'s Consumer,
    credential: Option<CredentialRef>,
) {
    let credential = credential.map(|c| (c, id_value(&c.id)));
    mark(ctx, consumer, None, credential);
}

/// As [`identify`], for a credential Kong names upstream (`X-Credential-Identifier`) by another field than
/// its id: basic-auth's and hmac-auth's `username`, jwt's `key`.
pub fn identify_as<'s>(
    ctx: &mut RequestCtx<'s>,
    consumer: &'s Consumer,
    credential: CredentialRef,
    identifier: &str,
) {
    let value = HeaderValue::from_str(identifier).unwrap_or_else(|_| id_value(&credential.id));
    mark(ctx, consumer, None, Some((credential, value)));
}

/// As [`identify_as`], for a consumer of the snapshot found with its headers
/// ([`crate::credentials::Credentials::consumer_with_headers`]), with the identifier's header value made
/// when the snapshot was built ([`crate::credentials::Identified`]).
pub fn identify_known<'s>(
    ctx: &mut RequestCtx<'s>,
    (consumer, headers): (&'s Consumer, &'s ConsumerHeaders),
    credential: CredentialRef,
    identifier: &HeaderValue,
) {
    mark(
        ctx,
        consumer,
        Some(headers),
        Some((credential, identifier.clone())),
    );
}

/// Sets the consumer and credential, and Kong's upstream headers: the consumer's (made with the
/// snapshot, [`ConsumerHeaders`]: `headers`, or looked up) and `X-Credential-Identifier`, or
/// `X-Anonymous-Consumer`.
fn mark<'s>(
    ctx: &mut RequestCtx<'s>,
    consumer: &'s Consumer,
    headers: Option<&'s ConsumerHeaders>,
    credential: Option<(CredentialRef, HeaderValue)>,
) {
    let made;
    let known = headers.or_else(|| ctx.credentials.consumer_headers(&consumer.id));
    let consumer_headers = match known {
        Some(h) => h,
        None => {
            made = ConsumerHeaders::of(consumer);
            &made
        }
    };
    let headers = &mut ctx.request.headers;
    clear_consumer_headers(headers);
    headers.insert(CONSUMER_ID, consumer_headers.id.clone());
    if let Some(v) = &consumer_headers.custom_id {
        headers.insert(CONSUMER_CUSTOM_ID, v.clone());
    }
    if let Some(v) = &consumer_headers.username {
        headers.insert(CONSUMER_USERNAME, v.clone());
    }
    ctx.anonymous = credential.is_none();
    ctx.credential = match credential {
        Some((cred, identifier)) => {
            headers.insert(CREDENTIAL_IDENTIFIER, identifier);
            Some(cred)
        }
        None => {
            headers.insert(ANONYMOUS_CONSUMER, HeaderValue::from_static("true"));
            None
        }
    };
    ctx.consumer = Some(consumer);
}

/// Marks the request as authenticated by a credential without a consumer (ldap-auth: the LDAP server knows
/// the user, Kong does not), named upstream by `identifier`; Kong's consumer headers are removed.
pub fn identify_without_consumer(
    ctx: &mut RequestCtx<'_>,
    credential: CredentialRef,
    identifier: &str,
) {
    clear_consumer_headers(&mut ctx.request.headers);
    set(ctx, CREDENTIAL_IDENTIFIER, identifier);
    ctx.anonymous = false;
    ctx.consumer = None;
    ctx.credential = Some(credential);
}

/// Without valid credentials: the `anonymous` consumer when configured, else the 401.
pub fn reject_or_anonymous(
    ctx: &mut RequestCtx<'_>,
    anonymous: Option<&str>,
    unauthorized: PluginResponse,
) -> Flow {
    let Some(anon) = anonymous else {
        return Flow::Respond(unauthorized);
    };
    match ctx.credentials.consumer_by_id_or_name(anon) {
        Some(consumer) => {
            identify(ctx, consumer, None);
            Flow::Continue
        }
        None => {
            tracing::error!(anonymous = anon, "anonymous consumer not found");
            Flow::Respond(PluginResponse::message(
                StatusCode::INTERNAL_SERVER_ERROR,
                "An unexpected error occurred",
            ))
        }
    }
}

/// Kong's rule for stacked auth plugins: when this plugin has `anonymous` set and an earlier plugin already
/// authenticated a real consumer, this one does nothing (logical OR).
pub fn already_authenticated(ctx: &RequestCtx<'_>, anonymous: Option<&str>) -> bool {
    anonymous.is_some() && ctx.credential.is_some()
}

/// The plugin has nothing to do for this request: a CORS preflight (`OPTIONS`) when `run_on_preflight` is
/// off, or a consumer already authenticated by an earlier plugin ([`already_authenticated`]).
pub fn skips(ctx: &RequestCtx<'_>, run_on_preflight: bool, anonymous: Option<&str>) -> bool {
    (!run_on_preflight && ctx.request.method == http::Method::OPTIONS)
        || already_authenticated(ctx, anonymous)
}

/// A 401 with `WWW-Authenticate: <scheme> realm="<realm>"`.
pub fn unauthorized(message: &str, scheme: &str, realm: &str) -> PluginResponse {
    PluginResponse::message(StatusCode::UNAUTHORIZED, message).with_header(
        http::header::WWW_AUTHENTICATE,
        &format!("{scheme} realm=\"{realm}\""),
    )
}

/// The first cookie named `name` (compared case-insensitively, as nginx's `$cookie_` variables) in the
/// request's `Cookie` headers.
pub fn cookie<'h>(headers: &'h http::HeaderMap, name: &str) -> Option<&'h str> {
    headers
        .get_all(http::header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|pair| {
            let (k, v) = pair.split_once('=')?;
            k.trim().eq_ignore_ascii_case(name).then(|| v.trim())
        })
}

#[cfg(test)]
mod tests;
