//! `key-auth` (priority 1250): an API key in a header, the query string or the body identifies the consumer.

use super::auth;
use crate::ctx::{CredentialRef, RequestCtx};
use crate::plugin::{Flow, Plugin, Registered};
use crate::registry::{typed_config, BuildCtx, Builtin};
use serde::Deserialize;
use sluice_model::declarative::schemas::typedefs;
use sluice_model::schema::{Field, Schema};
use std::borrow::Cow;
use std::sync::Arc;

#[derive(Debug, Deserialize)]
struct Config {
    /// Header / query / body field names that may carry the key.
    key_names: Vec<String>,
    /// Remove the key before proxying.
    hide_credentials: bool,
    /// Consumer (id or username) used when no valid key is given, instead of a 401.
    anonymous: Option<String>,
    key_in_header: bool,
    key_in_query: bool,
    /// Look in urlencoded or JSON bodies (the proxy then buffers the request body).
    key_in_body: bool,
    /// Authenticate CORS preflight (OPTIONS) requests too.
    run_on_preflight: bool,
    /// The realm of `WWW-Authenticate`.
    realm: Option<String>,
}

pub fn builtin() -> Builtin {
    let config = Schema::new(vec![
        (
            "key_names",
            Field::array(Field::string().len_min(1).check(typedefs::header_name))
                .default(serde_json::json!(["apikey"]))
                .len_min(1),
        ),
        ("hide_credentials", Field::boolean().default(false)),
        ("anonymous", Field::string()),
        ("key_in_header", Field::boolean().default(true)),
        ("key_in_query", Field::boolean().default(true)),
        ("key_in_body", Field::boolean().default(false)),
        ("run_on_preflight", Field::boolean().default(true)),
        ("realm", Field::string()),
    ]);
    Builtin::new("key-auth", 1250, config, build).no_consumer()
}

fn build(_: &BuildCtx<'_>, entity: &sluice_model::Plugin) -> Result<Arc<dyn Plugin>, String> {
    let config: Config = typed_config(entity)?;
    let headers = config
        .key_names
        .iter()
        .map(|n| http::HeaderName::from_bytes(n.to_ascii_lowercase().as_bytes()).ok())
        .collect();
    Ok(register(KeyAuth { config, headers }))
}

struct KeyAuth {
    config: Config,
    /// `key_names` as header names (None for a name that cannot be one), made once per config.
    headers: Vec<Option<http::HeaderName>>,
}

/// Where the key was found (the index of its name in `key_names`), so `hide_credentials` can remove it.
enum Found {
    Header(usize),
    Query(usize),
    Body(usize),
}

fn query_value<'q>(query: &'q str, name: &str) -> Option<&'q str> {
    query.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        (k == name).then_some(v)
    })
}

impl KeyAuth {
    /// The key the request carries, borrowed from its head (or read from its body), and where it is.
    fn find<'r>(&self, ctx: &'r RequestCtx<'_>) -> Option<(Cow<'r, str>, Found)> {
        for (i, (name, header)) in self.config.key_names.iter().zip(&self.headers).enumerate() {
            if let Some(h) = header.as_ref().filter(|_| self.config.key_in_header) {
                if let Some(v) = ctx.request.headers.get(h).and_then(|v| v.to_str().ok()) {
                    return Some((Cow::Borrowed(v), Found::Header(i)));
                }
            }
            if self.config.key_in_query {
                if let Some(v) = ctx.request.uri.query().and_then(|q| query_value(q, name)) {
                    return Some((Cow::Borrowed(v), Found::Query(i)));
                }
            }
            if self.config.key_in_body {
                if let Some(v) = body_value(ctx, name) {
                    return Some((Cow::Owned(v), Found::Body(i)));
                }
            }
        }
        None
    }

    fn hide(&self, ctx: &mut RequestCtx<'_>, found: Found) {
        match found {
            Found::Header(i) => {
                if let Some(h) = &self.headers[i] {
                    ctx.request.headers.remove(h);
                }
            }
            Found::Query(i) => {
                let name = &self.config.key_names[i];
                let path = ctx.request.uri.path().to_string();
                let kept: Vec<&str> = ctx
                    .request
                    .uri
                    .query()
                    .unwrap_or("")
                    .split('&')
                    .filter(|p| !p.is_empty() && p.split('=').next() != Some(name.as_str()))
                    .collect();
                let pq = if kept.is_empty() {
                    path
                } else {
                    format!("{path}?{}", kept.join("&"))
                };
                if let Ok(uri) = pq.parse() {
                    ctx.request.uri = uri;
                }
            }
            Found::Body(i) => {
                if let Some(body) = ctx.body.take() {
                    let name = &self.config.key_names[i];
                    ctx.body = Some(remove_body_field(&body, name, &ctx.request.headers));
                    ctx.request.headers.remove(http::header::CONTENT_LENGTH);
                }
            }
        }
    }
}

fn is_json(headers: &http::HeaderMap) -> bool {
    headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("json"))
}

fn body_value(ctx: &RequestCtx<'_>, name: &str) -> Option<String> {
    let body = ctx.body.as_ref()?;
    if is_json(&ctx.request.headers) {
        let v: serde_json::Value = serde_json::from_slice(body).ok()?;
        return v.get(name)?.as_str().map(String::from);
    }
    query_value(std::str::from_utf8(body).ok()?, name).map(String::from)
}

fn remove_body_field(body: &bytes::Bytes, name: &str, headers: &http::HeaderMap) -> bytes::Bytes {
    if is_json(headers) {
        if let Ok(serde_json::Value::Object(mut m)) = serde_json::from_slice(body) {
            m.remove(name);
            return serde_json::Value::Object(m).to_string().into();
        }
        return body.clone();
    }
    let text = String::from_utf8_lossy(body);
    let kept: Vec<&str> = text
        .split('&')
        .filter(|p| p.split('=').next() != Some(name))
        .collect();
    kept.join("&").into()
}

impl KeyAuth {
    fn needs_request_body(&self) -> bool {
        self.config.key_in_body
    }

    fn access(&self, ctx: &mut RequestCtx<'_>) -> Flow {
        let anonymous = self.config.anonymous.as_deref();
        if auth::skips(ctx, self.config.run_on_preflight, anonymous) {
            return Flow::Continue;
        }
        let realm = self.config.realm.as_deref().unwrap_or("kong");
        let Some((key, found)) = self.find(ctx) else {
            return auth::reject_or_anonymous(
                ctx,
                anonymous,
                auth::unauthorized("No API key found in request", "Key", realm),
            );
        };
        let credentials = ctx.credentials;
        let known = credentials.key(&key).and_then(|cred| {
            let consumer = credentials.consumer_with_headers(&cred.credential.consumer.id)?;
            Some((cred, consumer))
        });
        drop(key);
        let Some((cred, consumer)) = known else {
            return auth::reject_or_anonymous(
                ctx,
                anonymous,
                auth::unauthorized("Unauthorized", "Key", realm),
            );
        };
        if self.config.hide_credentials {
            self.hide(ctx, found);
        }
        let credential = CredentialRef {
            id: cred.credential.id,
            plugin: "key-auth",
        };
        auth::identify_known(ctx, consumer, credential, &cred.identifier);
        Flow::Continue
    }
}

/// This plugin's phases: each handler is registered here, next to where it is implemented.
fn register(plugin: KeyAuth) -> Arc<dyn Plugin> {
    let reads_body = plugin.needs_request_body();
    Registered::new("key-auth", plugin)
        .access(KeyAuth::access)
        .reads_request_body(reads_body)
        .build()
}
