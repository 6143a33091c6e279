//! What the oauth2 endpoints read from a request and how they answer: Kong's parameters (the query string,
//! merged with a urlencoded or JSON body for POST/PUT/PATCH), a client's credentials, the scope check, and
//! the JSON answers with Kong's `error` / `error_description` and no-cache headers.

use super::super::transform::form;
use super::config::Config;
use crate::ctx::RequestCtx;
use crate::response::PluginResponse;
use base64::Engine;
use http::{HeaderName, StatusCode};
use serde_json::{Map, Value};

/// The request's parameters by name, as Kong sees them (a repeated or bare name is not a string).
pub struct Params(Map<String, Value>);

impl Params {
    pub fn of(ctx: &RequestCtx<'_>) -> Params {
        let mut params = form::parse(ctx.request.uri.query().unwrap_or(""));
        let method = &ctx.request.method;
        if matches!(
            *method,
            http::Method::POST | http::Method::PUT | http::Method::PATCH
        ) {
            params.extend(form::body_args(ctx));
        }
        Params(params)
    }

    /// The parameter when it is a string.
    pub fn text(&self, name: &str) -> Option<&str> {
        self.0.get(name).and_then(Value::as_str)
    }

    /// The parameter as given, whatever its type.
    pub fn raw(&self, name: &str) -> Option<&Value> {
        self.0.get(name)
    }

    /// A string that is not blank.
    pub fn filled(&self, name: &str) -> Option<&str> {
        self.text(name).filter(|v| !v.trim().is_empty())
    }
}

/// A client's `client_id` and `client_secret`: both parameters, else a `Basic` value of the auth header
/// (then `from_header`), else the `client_id` parameter alone.
pub struct ClientAuth {
    pub client_id: Option<String>,
    pub client_secret: Option<String>,
    pub from_header: bool,
}

impl ClientAuth {
    pub fn of(params: &Params, ctx: &RequestCtx<'_>, header: &HeaderName) -> ClientAuth {
        let (id, secret) = (params.text("client_id"), params.text("client_secret"));
        if let (Some(id), Some(secret)) = (id, secret) {
            return ClientAuth {
                client_id: Some(id.into()),
                client_secret: Some(secret.into()),
                from_header: false,
            };
        }
        if let Some(value) = ctx.request.headers.get(header) {
            let (client_id, client_secret) = basic(value.as_bytes()).unzip();
            return ClientAuth {
                client_id,
                client_secret: client_secret.flatten(),
                from_header: true,
            };
        }
        ClientAuth {
            client_id: id.map(String::from),
            client_secret: None,
            from_header: false,
        }
    }
}

/// `Basic <base64 of id:secret>` (Kong's unanchored `\s*[Bb]asic\s*(.+)`): the id, and the secret when the
/// decoded text has a colon.
pub(super) fn basic(value: &[u8]) -> Option<(String, Option<String>)> {
    let text = std::str::from_utf8(value).ok()?;
    let at = text.find("Basic").or_else(|| text.find("basic"))?;
    let encoded = text[at + 5..].trim_start();
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim_end())
        .ok()?;
    let decoded = String::from_utf8(decoded).ok()?;
    Some(match decoded.split_once(':') {
        Some((id, secret)) => (id.to_string(), Some(secret.to_string())),
        None => (decoded, None),
    })
}

/// Kong's answer parameters: `{"error": code, "error_description": description}`.
pub fn error(code: &str, description: impl Into<String>) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("error".into(), code.into());
    m.insert(
        "error_description".into(),
        Value::String(description.into()),
    );
    m
}

pub fn is_error(params: &Map<String, Value>) -> bool {
    params.contains_key("error")
}

/// The requested scopes checked against `scopes`, joined by spaces (None when none was asked).
pub fn scope(params: &Params, config: &Config) -> Result<Option<String>, Map<String, Value>> {
    let asked = params.raw("scope");
    if let (Some(allowed), Some(asked)) = (&config.scopes, asked) {
        let Some(asked) = asked.as_str() else {
            return Err(error("invalid_scope", "scope must be a string"));
        };
        let mut scopes = Vec::new();
        for s in asked.split_whitespace() {
            if !allowed.iter().any(|a| a == s) {
                return Err(error(
                    "invalid_scope",
                    format!("\"{s}\" is an invalid scope"),
                ));
            }
            scopes.push(s);
        }
        return Ok((!scopes.is_empty()).then(|| scopes.join(" ")));
    }
    if asked.is_none() && config.mandatory_scope {
        return Err(error("invalid_scope", "You must specify a scope"));
    }
    Ok(None)
}

/// Kong's `WWW-Authenticate` for Bearer tokens: the realm, then the error and its description when given.
pub fn bearer_challenge(realm: Option<&str>, error: Option<(&str, &str)>) -> String {
    let mut parts = Vec::new();
    if let Some(realm) = realm.filter(|r| !r.is_empty()) {
        parts.push(format!("realm=\"{realm}\""));
    }
    if let Some((code, description)) = error {
        parts.push(format!("error=\"{code}\""));
        parts.push(format!("error_description=\"{description}\""));
    }
    match parts.is_empty() {
        true => "Bearer".into(),
        false => format!("Bearer {}", parts.join(", ")),
    }
}

/// An endpoint's JSON answer with Kong's `Cache-Control: no-store` and `Pragma: no-cache`.
pub fn reply(status: StatusCode, body: &Value) -> PluginResponse {
    PluginResponse::json(status, body.to_string().into())
        .with_header(http::header::CACHE_CONTROL, "no-store")
        .with_header(http::header::PRAGMA, "no-cache")
}

/// A `{"error", "error_description"}` answer with a `WWW-Authenticate` value.
pub fn refuse(
    status: StatusCode,
    code: &str,
    description: &str,
    challenge: &str,
) -> PluginResponse {
    PluginResponse::json(
        status,
        Value::Object(error(code, description)).to_string().into(),
    )
    .with_header(http::header::WWW_AUTHENTICATE, challenge)
}

/// Seconds since the epoch.
pub fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}
