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
mod capture;
mod config;
mod key;
mod policy;
pub mod store;
#[cfg(test)]
mod tests;

use crate::ctx::RequestCtx;
use crate::plugin::{Flow, Plugin, Registered};
use crate::registry::{typed_config, BuildCtx, Builtin};
use crate::response::PluginResponse;
use bytes::Bytes;
use capture::Caching;
use config::{schema, Config, Shown};
use http::header::{HeaderName, HeaderValue, AGE};
use http::{HeaderMap, Method, StatusCode};
use key::Vary;
use policy::{Directives, Mime};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};
use store::MemoryStore;

use store::{X_CACHE_KEY, X_CACHE_STATUS};
const KONG_DEBUG: HeaderName = HeaderName::from_static("kong-debug");

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

fn millis(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

impl ProxyCache {
    /// Sets a cache header when `response_headers` shows it or the client asked with `Kong-Debug`.
    fn tag(
        headers: &mut impl crate::added_headers::SetHeader,
        shown: bool,
        debug: bool,
        name: HeaderName,
        value: HeaderValue,
    ) {
        if shown || debug {
            headers.set(name, value);
        }
    }

    /// Marks the request for storing under `key` (a miss or a refresh) and says so in the headers.
    fn mark(
        &self,
        ctx: &mut RequestCtx<'_>,
        key: String,
        hex: HeaderValue,
        status: &'static str,
    ) -> Flow {
        let debug = ctx.request.headers.contains_key(KONG_DEBUG);
        let headers = &mut ctx.response_headers;
        Self::tag(headers, self.shown.key, debug, X_CACHE_KEY, hex.clone());
        let status = HeaderValue::from_static(status);
        Self::tag(headers, self.shown.status, debug, X_CACHE_STATUS, status);
        ctx.request.extensions.insert(Caching::new(key.into(), hex));
        Flow::Continue
    }

    fn access(&self, ctx: &mut RequestCtx<'_>) -> Flow {
        let cc = match self.cache_control {
            true => Directives::of(&ctx.request.headers),
            false => Directives::default(),
        };
        if !self.methods.contains(&ctx.request.method) || cc.no_store || cc.no_cache {
            let debug = ctx.request.headers.contains_key(KONG_DEBUG);
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
        let key = key::build(ctx, &self.vary);
        let now_ms = millis(ctx.started_wall);
        let Some(entry) = self.store.fetch(&key, now_ms) else {
            let hex =
                HeaderValue::from_str(&key::hex(&key)).unwrap_or(HeaderValue::from_static(""));
            if cc.only_if_cached {
                let debug = ctx.request.headers.contains_key(KONG_DEBUG);
                Self::tag(
                    &mut ctx.response_headers,
                    self.shown.key,
                    debug,
                    X_CACHE_KEY,
                    hex,
                );
                return Flow::Respond(PluginResponse {
                    status: StatusCode::GATEWAY_TIMEOUT,
                    headers: HeaderMap::new(),
                    body: Bytes::new(),
                });
            }
            return self.mark(ctx, key, hex, "Miss");
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
            return self.mark(ctx, key, entry.hex.clone(), "Refresh");
        }
        let debug = ctx.request.headers.contains_key(KONG_DEBUG);
        if debug || (self.shown.age && self.shown.status && self.shown.key) {
            let mut headers = entry.hit_headers.clone();
            if let Some(slot) = headers.get_mut(AGE) {
                *slot = HeaderValue::from(age);
            }
            return Flow::Respond(PluginResponse {
                status: entry.status,
                headers,
                body: entry.body.clone(),
            });
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
        Self::tag(
            &mut headers,
            self.shown.key,
            debug,
            X_CACHE_KEY,
            entry.hex.clone(),
        );
        Flow::Respond(PluginResponse {
            status: entry.status,
            headers,
            body: entry.body.clone(),
        })
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
