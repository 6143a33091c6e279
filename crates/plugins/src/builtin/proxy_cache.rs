//! `proxy-cache` (priority 100), strategy `memory`: answers a repeated cacheable request from a stored
//! response in `access`, without the upstream, as Kong does.
//!
//! - `access`: a request whose method is not in `request_method` (or, with `cache_control`, that says
//!   `no-store`/`no-cache`) is a `Bypass`. Otherwise its key ([`key`]) is looked up: a fresh entry is sent
//!   as stored (`Hit`, with `Age`); none is a `Miss` (`only-if-cached` then answers 504); a stale one (older
//!   than `cache_ttl`, or than the client's `max-age`/`max-stale`/`min-fresh` with `cache_control`) is a
//!   `Refresh`. A miss or refresh marks the request for storing.
//! - `header_filter`: a marked response is kept only with a status in `response_code`, a `Content-Type`
//!   matching one of `content_type` exactly, and (with `cache_control`) no `private`/`no-store`/`no-cache`
//!   and a positive TTL; otherwise it becomes a `Bypass`.
//! - `body_filter`: the body is copied while it streams to the client and stored once it is complete, for
//!   `storage_ttl`, else the response's TTL (with `cache_control`), else `cache_ttl`.
//!
//! `X-Cache-Status`, `X-Cache-Key` and `Age` follow `response_headers`, or are always sent when the request
//! has a `Kong-Debug` header. The stores ([`store`]) outlive config reloads; [`admin`] serves the Admin API.

pub mod admin;
mod key;
mod policy;
pub mod store;
#[cfg(test)]
mod tests;

use crate::ctx::RequestCtx;
use crate::plugin::{Flow, Plugin, Registered};
use crate::registry::{typed_config, BuildCtx, Builtin};
use crate::response::PluginResponse;
use bytes::{Bytes, BytesMut};
use http::header::{HeaderName, HeaderValue, AGE, CONTENT_LENGTH, CONTENT_TYPE};
use http::{HeaderMap, Method, StatusCode};
use key::Vary;
use policy::{Directives, Mime};
use serde::Deserialize;
use sluice_model::schema::{Field, Schema};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};
use store::{Digest, Entry, MemoryStore};

const X_CACHE_STATUS: HeaderName = HeaderName::from_static("x-cache-status");
const X_CACHE_KEY: HeaderName = HeaderName::from_static("x-cache-key");

#[derive(Debug, Deserialize)]
struct Memory {
    dictionary_name: String,
}

#[derive(Debug, Deserialize)]
struct Shown {
    age: bool,
    #[serde(rename = "X-Cache-Status")]
    status: bool,
    #[serde(rename = "X-Cache-Key")]
    key: bool,
}

#[derive(Debug, Deserialize)]
struct Config {
    response_code: Vec<u16>,
    request_method: Vec<String>,
    content_type: Vec<String>,
    cache_ttl: u64,
    cache_control: bool,
    ignore_uri_case: bool,
    storage_ttl: Option<u64>,
    memory: Memory,
    vary_query_params: Option<Vec<String>>,
    vary_headers: Option<Vec<String>>,
    response_headers: Shown,
}

fn schema() -> Schema {
    let strings = || Field::array(Field::string());
    let shown = |name| (name, Field::boolean().default(true));
    Schema::new(vec![
        (
            "response_code",
            Field::array(Field::integer().between(100.0, 900.0))
                .len_min(1)
                .required()
                .default(serde_json::json!([200, 301, 404])),
        ),
        (
            "request_method",
            Field::array(Field::string().one_of(&["HEAD", "GET", "POST", "PATCH", "PUT"]))
                .required()
                .default(serde_json::json!(["GET", "HEAD"])),
        ),
        (
            "content_type",
            strings()
                .required()
                .default(serde_json::json!(["text/plain", "application/json"])),
        ),
        ("cache_ttl", Field::integer().default(300).gt(0.0)),
        ("strategy", Field::string().one_of(&["memory"]).required()),
        ("cache_control", Field::boolean().default(false).required()),
        ("ignore_uri_case", Field::boolean().default(false)),
        ("storage_ttl", Field::integer()),
        (
            "memory",
            Field::record(Schema::new(vec![(
                "dictionary_name",
                Field::string().required().default("kong_db_cache"),
            )])),
        ),
        ("vary_query_params", strings()),
        ("vary_headers", strings()),
        (
            "response_headers",
            Field::record(Schema::new(vec![
                shown("age"),
                shown("X-Cache-Status"),
                shown("X-Cache-Key"),
            ])),
        ),
    ])
}

pub fn builtin() -> Builtin {
    Builtin::new("proxy-cache", 100, schema(), build)
}

fn build(ctx: &BuildCtx<'_>, entity: &sluice_model::Plugin) -> Result<Arc<dyn Plugin>, String> {
    let c: Config = typed_config(entity)?;
    let methods = c
        .request_method
        .iter()
        .filter_map(|m| Method::from_bytes(m.as_bytes()).ok())
        .collect();
    Ok(register(ProxyCache {
        codes: c.response_code,
        methods,
        // A configured type that does not parse matches nothing, as in Kong.
        types: c
            .content_type
            .iter()
            .filter_map(|t| Mime::parse(t))
            .collect(),
        cache_ttl: c.cache_ttl,
        storage_ttl: c.storage_ttl,
        cache_control: c.cache_control,
        vary: Vary::new(
            c.vary_query_params.unwrap_or_default(),
            c.vary_headers.unwrap_or_default(),
            c.ignore_uri_case,
        ),
        shown: c.response_headers,
        store: ctx.state.proxy_caches().open(&c.memory.dictionary_name),
    }))
}

struct ProxyCache {
    codes: Vec<u16>,
    methods: Vec<Method>,
    types: Vec<Mime>,
    cache_ttl: u64,
    storage_ttl: Option<u64>,
    cache_control: bool,
    vary: Vary,
    shown: Shown,
    store: Arc<MemoryStore>,
}

/// A request marked for storing (kept in the request's extensions from `access` to the last chunk).
#[derive(Clone)]
struct Caching {
    key: Digest,
    /// Set in `header_filter` when the response is cacheable.
    capture: Option<Capture>,
}

#[derive(Clone)]
struct Capture {
    status: StatusCode,
    headers: HeaderMap,
    ttl: f64,
    body: BytesMut,
}

fn millis(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Headers never replayed from the cache (Kong's hop-by-hop list, `Content-Length`, remaining rate-limit
/// counts) and the cache's own, which a hit sets afresh.
fn replayable(name: &HeaderName) -> bool {
    !matches!(
        name.as_str(),
        "connection"
            | "keep-alive"
            | "proxy-authenticate"
            | "proxy-authorization"
            | "te"
            | "trailers"
            | "transfer-encoding"
            | "upgrade"
            | "content-length"
            | "age"
            | "x-cache-status"
            | "x-cache-key"
    ) && !name.as_str().contains("ratelimit-remaining")
}

impl ProxyCache {
    /// Sets a cache header when `response_headers` shows it or the client asked with `Kong-Debug`.
    fn tag(
        headers: &mut HeaderMap,
        shown: bool,
        debug: bool,
        name: HeaderName,
        value: HeaderValue,
    ) {
        if shown || debug {
            headers.insert(name, value);
        }
    }

    fn mark(
        &self,
        ctx: &mut RequestCtx<'_>,
        key: Digest,
        status: &'static str,
        debug: bool,
    ) -> Flow {
        ctx.request
            .extensions
            .insert(Caching { key, capture: None });
        let value = HeaderValue::from_static(status);
        Self::tag(
            &mut ctx.response_headers,
            self.shown.status,
            debug,
            X_CACHE_STATUS,
            value,
        );
        Flow::Continue
    }

    fn access(&self, ctx: &mut RequestCtx<'_>) -> Flow {
        let debug = ctx.request.headers.contains_key("kong-debug");
        let cc = match self.cache_control {
            true => Directives::of(&ctx.request.headers),
            false => Directives::default(),
        };
        if !self.methods.contains(&ctx.request.method) || cc.no_store || cc.no_cache {
            let bypass = HeaderValue::from_static("Bypass");
            Self::tag(
                &mut ctx.response_headers,
                self.shown.status,
                debug,
                X_CACHE_STATUS,
                bypass,
            );
            return Flow::Continue;
        }
        let (digest, hex) = key::build(ctx, &self.vary);
        let hex = HeaderValue::from_str(&hex).unwrap_or(HeaderValue::from_static(""));
        Self::tag(
            &mut ctx.response_headers,
            self.shown.key,
            debug,
            X_CACHE_KEY,
            hex.clone(),
        );
        let now_ms = millis(ctx.started_wall);
        let Some(entry) = self.store.fetch(&digest, now_ms) else {
            if cc.only_if_cached {
                return Flow::Respond(PluginResponse {
                    status: StatusCode::GATEWAY_TIMEOUT,
                    headers: HeaderMap::new(),
                    body: Bytes::new(),
                });
            }
            return self.mark(ctx, digest, "Miss", debug);
        };
        let age = (now_ms / 1000).saturating_sub(entry.timestamp);
        let (a, ttl) = (age as f64, entry.ttl);
        let stale = match self.cache_control {
            true => {
                cc.max_age.is_some_and(|m| a > m)
                    || cc.max_stale.is_some_and(|m| a - ttl > m)
                    || cc.min_fresh.is_some_and(|m| ttl - a < m)
            }
            false => age > self.cache_ttl,
        };
        if stale {
            return self.mark(ctx, digest, "Refresh", debug);
        }
        let mut headers = entry.headers.clone();
        Self::tag(
            &mut headers,
            self.shown.age,
            debug,
            AGE,
            HeaderValue::from(age),
        );
        let hit = HeaderValue::from_static("Hit");
        Self::tag(&mut headers, self.shown.status, debug, X_CACHE_STATUS, hit);
        Self::tag(&mut headers, self.shown.key, debug, X_CACHE_KEY, hex);
        Flow::Respond(PluginResponse {
            status: entry.status,
            headers,
            body: entry.body.clone(),
        })
    }

    /// Kong's `cacheable_response`.
    fn cacheable(&self, head: &http::response::Parts, cc: &Directives, ttl: f64) -> bool {
        let content_type = head
            .headers
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .and_then(Mime::parse);
        self.codes.contains(&head.status.as_u16())
            && content_type.is_some_and(|t| self.types.iter().any(|want| want.matches(&t)))
            && !(cc.private || cc.no_store || cc.no_cache)
            && (!self.cache_control || ttl > 0.0)
    }

    fn header_filter(&self, ctx: &mut RequestCtx<'_>, head: &mut http::response::Parts) {
        if ctx.request.extensions.get::<Caching>().is_none() {
            return;
        }
        let now = SystemTime::now();
        let (cc, ttl) = match self.cache_control {
            true => {
                let cc = Directives::of(&head.headers);
                (cc, cc.resource_ttl(&head.headers, now))
            }
            false => (Directives::default(), self.cache_ttl as f64),
        };
        if !self.cacheable(head, &cc, ttl) {
            ctx.request.extensions.remove::<Caching>();
            let debug = ctx.request.headers.contains_key("kong-debug");
            let bypass = HeaderValue::from_static("Bypass");
            Self::tag(
                &mut head.headers,
                self.shown.status,
                debug,
                X_CACHE_STATUS,
                bypass,
            );
            return;
        }
        let head_only = ctx.request.method == Method::HEAD;
        let mut headers = HeaderMap::with_capacity(head.headers.len());
        for (name, value) in &head.headers {
            if replayable(name) || (head_only && name == CONTENT_LENGTH) {
                headers.append(name.clone(), value.clone());
            }
        }
        let capture = Capture {
            status: head.status,
            headers,
            ttl,
            body: BytesMut::new(),
        };
        if head_only {
            // A HEAD response has no body to filter: it is complete now.
            if let Some(caching) = ctx.request.extensions.remove::<Caching>() {
                self.save(caching.key, capture, now);
            }
        } else if let Some(caching) = ctx.request.extensions.get_mut::<Caching>() {
            caching.capture = Some(capture);
        }
    }

    fn body_filter(&self, ctx: &mut RequestCtx<'_>, chunk: &mut Bytes, eof: bool) {
        let Some(caching) = ctx.request.extensions.get_mut::<Caching>() else {
            return;
        };
        let Some(capture) = &mut caching.capture else {
            return;
        };
        if capture.body.len() + chunk.len() > self.store.capacity() {
            // Larger than the whole store: it could not be stored anyway.
            ctx.request.extensions.remove::<Caching>();
            return;
        }
        capture.body.extend_from_slice(chunk);
        if eof {
            if let Some(Caching {
                key,
                capture: Some(c),
            }) = ctx.request.extensions.remove()
            {
                self.save(key, c, SystemTime::now());
            }
        }
    }

    fn save(&self, key: Digest, c: Capture, now: SystemTime) {
        let storage_ttl = match (self.storage_ttl, self.cache_control) {
            (Some(s), _) => s as f64,
            (None, true) => c.ttl,
            (None, false) => self.cache_ttl as f64,
        };
        let now_ms = millis(now);
        let entry = Entry::new(
            c.status,
            c.headers,
            c.body.freeze(),
            c.ttl,
            now_ms,
            storage_ttl,
        );
        if !self.store.store(key, entry, now_ms) {
            tracing::warn!("proxy-cache: a response larger than the cache was not stored");
        }
    }
}

/// This plugin's phases: each handler is registered here, next to where it is implemented.
fn register(plugin: ProxyCache) -> Arc<dyn Plugin> {
    Registered::new("proxy-cache", plugin)
        .access(ProxyCache::access)
        .header_filter(ProxyCache::header_filter)
        .body_filter(ProxyCache::body_filter)
        .build()
}
