//! `session` (priority 1900): an encrypted cookie remembers who authenticated, so later requests need only
//! the cookie. Kong's plugin over lua-resty-session 4, with `storage: cookie`.
//!
//! `access` (before every authentication plugin) opens the session cookie: a valid one for this
//! `audience` authenticates its consumer and credential (Kong's consumer headers go upstream; a later auth
//! plugin with `anonymous` then does nothing), is renewed or touched as its timeouts near, and may ask for
//! `Session-*` headers; a logout request (one of `logout_methods` with `logout_query_arg`, or with
//! `logout_post_arg` in its body when `read_body_for_logout`) clears the cookies and is answered `200`.
//! `header_filter` puts the cookies on the response and, when another plugin authenticated this request
//! with a credential (not an anonymous consumer), saves a new session for it.

mod codec;
mod cookies;
mod properties;
mod schema;
mod state;

use super::auth;
use super::transform::form;
use crate::ctx::{CredentialRef, RequestCtx};
use crate::plugin::{Flow, Plugin, Registered};
use crate::registry::{typed_config, BuildCtx, Builtin};
use crate::response::PluginResponse;
use http::{HeaderName, HeaderValue, StatusCode};
use schema::Config;
use state::{Session, Settings, Timeouts};
use std::sync::Arc;

pub fn builtin() -> Builtin {
    Builtin::new("session", 1900, schema::schema(), build).no_consumer()
}

fn build(_: &BuildCtx<'_>, entity: &sluice_model::Plugin) -> Result<Arc<dyn Plugin>, String> {
    let c: Config = typed_config(entity)?;
    let settings = Settings {
        keys: codec::Keys::new(&c.secret),
        attrs: cookies::Attributes::new(
            c.cookie_domain.as_deref(),
            &c.cookie_path,
            &c.cookie_same_site,
            c.cookie_secure,
            c.cookie_http_only,
        ),
        audience: c.audience,
        cookie_name: c.cookie_name,
        timeouts: Timeouts {
            idling: c.idling_timeout,
            rolling: c.rolling_timeout,
            absolute: c.absolute_timeout,
        },
        remember: c.remember.then(|| {
            let t = Timeouts {
                idling: 0.0,
                rolling: c.remember_rolling_timeout,
                absolute: c.remember_absolute_timeout,
            };
            (c.remember_cookie_name, t)
        }),
        request_headers: c.request_headers.unwrap_or_default(),
        response_headers: c.response_headers.unwrap_or_default(),
    };
    let logout = Logout {
        methods: c.logout_methods.unwrap_or_default(),
        query_arg: c.logout_query_arg,
        post_arg: c.logout_post_arg.filter(|_| c.read_body_for_logout),
    };
    Ok(register(SessionPlugin { settings, logout }))
}

struct SessionPlugin {
    settings: Settings,
    logout: Logout,
}

/// When a request logs out.
struct Logout {
    methods: Vec<String>,
    query_arg: Option<String>,
    /// `logout_post_arg`, only when `read_body_for_logout` is on.
    post_arg: Option<String>,
}

/// The request's session, from `access` to `header_filter` (in [`RequestCtx::plugin_data`]).
#[derive(Clone)]
struct Current(Session);

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl SessionPlugin {
    /// Logs the session out (its cookies are expired on the response).
    fn end(&self, session: &mut Session, ctx: &RequestCtx<'_>, now: u64) {
        if let Err(e) = self.settings.logout(session, &ctx.request.headers, now) {
            tracing::warn!("session logout failed ({e})");
        }
    }

    fn access(&self, ctx: &mut RequestCtx<'_>) -> Flow {
        let now = now();
        let (mut session, opened) = self.settings.start(&ctx.request.headers, now);
        if let Err(reason) = opened {
            tracing::debug!("session not present ({reason})");
            // Without a cookie there is nothing to keep: `header_filter` starts afresh if it must save.
            if !session.out.0.is_empty() || reason != state::NO_COOKIE {
                ctx.plugin_data.insert(Current(session));
            }
            return Flow::Continue;
        }
        if self.logout.requested(ctx) {
            tracing::debug!("session logging out");
            self.end(&mut session, ctx, now);
            let mut answer = PluginResponse {
                status: StatusCode::OK,
                headers: http::HeaderMap::new(),
                body: bytes::Bytes::new(),
            };
            session.out.apply(&mut answer.headers);
            return Flow::Respond(answer);
        }
        let credentials = ctx.credentials;
        let found = session.data().and_then(|(consumer, credential)| {
            let consumer = credentials.consumer(&consumer.parse().ok()?)?;
            Some((consumer, credential.parse::<uuid::Uuid>().ok()?))
        });
        let Some((consumer, credential)) = found else {
            tracing::debug!("failed to find consumer, destroying session");
            self.end(&mut session, ctx, now);
            ctx.plugin_data.insert(Current(session));
            return Flow::Continue;
        };
        if let Err(e) = self.settings.refresh(&mut session, now) {
            tracing::warn!("session refresh failed ({e})");
        }
        for (name, value) in self
            .settings
            .headers(&session, &self.settings.request_headers)
        {
            if let Ok(v) = HeaderValue::from_str(&value) {
                ctx.request.headers.insert(HeaderName::from_static(name), v);
            }
        }
        let to_client = self
            .settings
            .headers(&session, &self.settings.response_headers);
        ctx.plugin_data.insert(Current(session));
        ctx.plugin_data.insert(Pending(to_client));
        let credential = CredentialRef {
            id: credential,
            plugin: "session",
        };
        auth::identify(ctx, consumer, Some(credential));
        Flow::Continue
    }

    fn header_filter(&self, ctx: &mut RequestCtx<'_>, response: &mut http::response::Parts) {
        let current = ctx.plugin_data.remove::<Current>();
        if let Some(Pending(headers)) = ctx.plugin_data.remove::<Pending>() {
            set_headers(&mut response.headers, headers);
        }
        let (Some(credential), Some(consumer)) = (ctx.credential, ctx.consumer) else {
            // No session for anonymous consumers.
            if let Some(Current(session)) = current {
                session.out.apply(&mut response.headers);
            }
            return;
        };
        let now = now();
        let mut session = match current {
            Some(Current(s)) => s,
            // No cookie, or `access` did not run (an earlier plugin answered): open it as `access` does.
            None => self.settings.start(&ctx.request.headers, now).0,
        };
        let mut ids = (uuid::Uuid::encode_buffer(), uuid::Uuid::encode_buffer());
        let consumer_id = consumer.id.hyphenated().encode_lower(&mut ids.0);
        let credential_id = credential.id.hyphenated().encode_lower(&mut ids.1);
        if session.opened && session.data() == Some((consumer_id, credential_id)) {
            session.out.apply(&mut response.headers);
            return;
        }
        let subject = consumer
            .username
            .as_deref()
            .or(consumer.custom_id.as_deref())
            .unwrap_or(consumer_id);
        session.set_data(consumer_id, credential_id, subject);
        if let Err(e) = self.settings.save(&mut session, &ctx.request.headers, now) {
            tracing::error!("session save failed ({e})");
        }
        let headers = self
            .settings
            .headers(&session, &self.settings.response_headers);
        session.out.apply(&mut response.headers);
        set_headers(&mut response.headers, headers);
    }
}

/// `Session-*` response headers `access` decided, for `header_filter`.
#[derive(Clone)]
struct Pending(Vec<(&'static str, String)>);

fn set_headers(headers: &mut http::HeaderMap, values: Vec<(&'static str, String)>) {
    for (name, value) in values {
        if let Ok(v) = HeaderValue::from_str(&value) {
            headers.insert(HeaderName::from_static(name), v);
        }
    }
}

impl Logout {
    /// One of `logout_methods`, with `logout_query_arg` in the query or (`read_body_for_logout`, and a
    /// POST, PUT, PATCH or DELETE) `logout_post_arg` in a form or JSON body.
    fn requested(&self, ctx: &RequestCtx<'_>) -> bool {
        let method = ctx.request.method.as_str();
        if !self.methods.iter().any(|m| m == method) {
            return false;
        }
        let query = ctx.request.uri.query().unwrap_or("");
        if self
            .query_arg
            .as_deref()
            .is_some_and(|arg| form::parse(query).contains_key(arg))
        {
            return true;
        }
        let (Some(arg), Some(_)) = (&self.post_arg, &ctx.body) else {
            return false;
        };
        if !matches!(method, "POST" | "PUT" | "PATCH" | "DELETE") {
            return false;
        }
        // A form argument counts with or without a value; a JSON one unless it is null or false.
        !matches!(
            form::body_args(ctx).get(arg),
            None | Some(serde_json::Value::Null) | Some(serde_json::Value::Bool(false))
        )
    }
}

/// This plugin's phases: each handler is registered here, next to where it is implemented.
fn register(plugin: SessionPlugin) -> Arc<dyn Plugin> {
    let reads_body = plugin.logout.post_arg.is_some();
    Registered::new("session", plugin)
        .access(SessionPlugin::access)
        .header_filter(SessionPlugin::header_filter)
        .reads_request_body(reads_body)
        .build()
}
