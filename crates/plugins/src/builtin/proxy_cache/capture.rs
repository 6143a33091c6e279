//! The response side of proxy-cache: `header_filter` decides whether a response marked in `access` may be
//! stored (Kong's `cacheable_response`) and keeps its head; `body_filter` copies the body as it streams to
//! the client and stores the entry once the last chunk went by. A HEAD response is stored at its head.

use super::policy::{Directives, Mime};
use super::store::Entry;
use super::{millis, ProxyCache, X_CACHE_STATUS};
use crate::ctx::RequestCtx;
use bytes::{Bytes, BytesMut};
use http::header::{HeaderName, HeaderValue, CONTENT_LENGTH, CONTENT_TYPE};
use http::{HeaderMap, Method, StatusCode};
use std::time::SystemTime;

/// A request marked for storing (kept in the request's extensions from `access` to the last chunk).
#[derive(Clone)]
pub(super) struct Caching {
    /// The key's text and its hex.
    key: Box<str>,
    hex: HeaderValue,
    /// Set in `header_filter` when the response is cacheable.
    capture: Option<Capture>,
}

impl Caching {
    /// A mark for the request whose key is `key`.
    pub(super) fn new(key: Box<str>, hex: HeaderValue) -> Caching {
        Caching {
            key,
            hex,
            capture: None,
        }
    }
}

/// A cacheable response's head, and its body as far as it went.
#[derive(Clone)]
pub(super) struct Capture {
    status: StatusCode,
    headers: HeaderMap,
    ttl: f64,
    body: BytesMut,
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

    pub(super) fn header_filter(&self, ctx: &mut RequestCtx<'_>, head: &mut http::response::Parts) {
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
            let debug = ctx.request.headers.contains_key(super::KONG_DEBUG);
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
                // A copy: the upstream's values share its read buffer, which must not live on here.
                let owned = HeaderValue::from_bytes(value.as_bytes()).unwrap_or(value.clone());
                headers.append(name.clone(), owned);
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
                self.save(caching, capture, now);
            }
        } else if let Some(caching) = ctx.request.extensions.get_mut::<Caching>() {
            caching.capture = Some(capture);
        }
    }

    pub(super) fn body_filter(&self, ctx: &mut RequestCtx<'_>, chunk: &mut Bytes, eof: bool) {
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
            if let Some(mut caching) = ctx.request.extensions.remove::<Caching>() {
                if let Some(c) = caching.capture.take() {
                    self.save(caching, c, SystemTime::now());
                }
            }
        }
    }

    fn save(&self, caching: Caching, c: Capture, now: SystemTime) {
        let storage_ttl = match (self.storage_ttl, self.cache_control) {
            (Some(s), _) => s as f64,
            (None, true) => c.ttl,
            (None, false) => self.cache_ttl as f64,
        };
        let now_ms = millis(now);
        let entry = Entry::new(
            caching.hex,
            c.status,
            c.headers,
            c.body.freeze(),
            c.ttl,
            now_ms,
            storage_ttl,
        );
        if !self.store.store(caching.key, entry, now_ms) {
            tracing::warn!("proxy-cache: a response larger than the cache was not stored");
        }
    }
}
