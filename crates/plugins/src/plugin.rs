//! The plugin trait: one method per Kong phase, each a no-op by default.
//!
//! Phase order for a proxied request (see `docs/phases.md`):
//! `rewrite` (global plugins only) → `access` → *upstream* → `header_filter` → `body_filter` (per chunk) → `log`.
//! A plugin ends a request early by returning [`Flow::Respond`] from `rewrite`/`access`; the remaining
//! `rewrite`/`access` handlers are skipped, but `header_filter`, `body_filter` and `log` still run on the
//! gateway-made response, as in Kong.

use crate::ctx::{LogRecord, RequestCtx};
use crate::response::PluginResponse;
use bytes::Bytes;
use std::future::Future;
use std::pin::Pin;

/// A future a plugin hands back when its `access` work must wait (e.g. on Redis). Boxed only on that path.
pub type Deferred = Pin<Box<dyn Future<Output = Flow> + Send + 'static>>;

/// What the pipeline does after a `rewrite` or `access` handler.
pub enum Flow {
    /// Go on with the next plugin.
    Continue,
    /// Stop the request here and send this response (later rewrite/access handlers are skipped).
    Respond(PluginResponse),
    /// Wait for this future, then act on its result. Use only when real I/O is needed.
    Defer(Deferred),
    /// Go on with the next plugin, adding these headers to whatever response the client gets (what a
    /// deferred future, which cannot hold the request's context, hands back instead of `Continue`).
    ContinueWith(http::HeaderMap),
}

/// A configured plugin instance. Built once per config snapshot by its factory (config already validated
/// against its schema), then shared by every request on that snapshot, so it must be `Send + Sync` and
/// keep per-request data in [`RequestCtx`].
pub trait Plugin: Send + Sync + 'static {
    /// Kong's plugin name, e.g. `key-auth`.
    fn name(&self) -> &'static str;

    /// Runs before routing decisions are final; Kong runs it for global plugins only.
    fn rewrite(&self, _ctx: &mut RequestCtx<'_>) -> Flow {
        Flow::Continue
    }

    /// Runs after routing, before the upstream is contacted: authentication, limits, termination.
    fn access(&self, _ctx: &mut RequestCtx<'_>) -> Flow {
        Flow::Continue
    }

    /// Runs when the response head is known (from the upstream or a plugin); may edit status and headers.
    /// Only called when [`Plugin::has_header_filter`] says so.
    fn header_filter(&self, _ctx: &mut RequestCtx<'_>, _response: &mut http::response::Parts) {}

    /// Whether [`Plugin::header_filter`] does anything. Return true when you implement it: the proxy calls
    /// it only then, and when no plugin of a chain reads the request after `access` (header_filter,
    /// body_filter, log) it moves the request head to the upstream instead of copying it.
    fn has_header_filter(&self) -> bool {
        false
    }

    /// Whether [`Plugin::body_filter`] does anything; the proxy skips the per-chunk call otherwise.
    fn has_body_filter(&self) -> bool {
        false
    }

    /// Runs on each response body chunk; `eof` marks the last one.
    fn body_filter(&self, _ctx: &mut RequestCtx<'_>, _chunk: &mut Bytes, _eof: bool) {}

    /// Whether the plugin needs the whole request body in [`RequestCtx::body`] during `access`
    /// (e.g. key-auth with `key_in_body`). The proxy buffers the body only when some plugin says so.
    fn needs_request_body(&self) -> bool {
        false
    }

    /// Whether [`Plugin::log`] does anything. Return true when you implement `log`: the proxy only keeps a
    /// request's context (and a copy of its head) past the response head for chains that log or filter
    /// bodies.
    fn has_log(&self) -> bool {
        false
    }

    /// Some for plugins the proxy serves itself at fixed points instead of through the chain (prometheus):
    /// the instance is resolved per route by Kong's precedence and never runs as a phase handler, so a
    /// route with only such plugins keeps the fast path.
    fn metrics_flags(&self) -> Option<sluice_metrics::Flags> {
        None
    }

    /// Runs after the response was sent (or the request failed); must not block: hand work to a queue.
    /// Called only when [`Plugin::has_log`] is true.
    fn log(&self, _ctx: &RequestCtx<'_>, _record: &LogRecord) {}
}
