//! Plugins and their phases: a plugin registers one handler per Kong phase it implements ([`Registered`]);
//!
//! Phase order for a proxied request (see `docs/phases.md`):
//! `rewrite` (global plugins only) → `access` → *upstream* → `header_filter` → `body_filter` (per chunk) → `log`.
//! A plugin ends a request early by returning [`Flow::Respond`] from `rewrite`/`access`; the remaining
//! `rewrite`/`access` handlers are skipped, but `header_filter`, `body_filter` and `log` still run on the
//! gateway-made response, as in Kong.

use crate::ctx::{LogRecord, RequestCtx};
use crate::response::PluginResponse;
use crate::stream::SessionRecord;
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
    ContinueWith(crate::AddedHeaders),
    /// Go on by applying this to the request's context (what a deferred future hands back when its result
    /// must reach the context: [`RequestCtx::plugin_data`] for later phases, request headers), then act on
    /// the flow it returns.
    Then(Box<dyn FnOnce(&mut RequestCtx<'_>) -> Flow + Send>),
}

/// A configured plugin instance as the chain runs it. Built once per config snapshot by its factory
/// (config already validated against its schema), then shared by every request on that snapshot.
///
/// Only [`Registered`] implements it (the trait is sealed): a plugin registers a handler for each phase it
/// implements, and a phase exists exactly when its handler was registered. So a phase cannot be
/// implemented and then skipped for a forgotten flag (an inherent handler that is never registered is dead
/// code, which the build refuses), nor declared without a handler; and the chain knows at build time which
/// phases a route needs, so phases no plugin has cost nothing per request.
pub trait Plugin: sealed::Sealed + Send + Sync + 'static {
    /// Kong's plugin name, e.g. `key-auth`.
    fn name(&self) -> &'static str;

    /// Runs before the router, for global instances only (as in Kong): the request may be edited (its
    /// path, headers) and then routed as edited, or answered. `ctx.route` and `ctx.service` are None.
    fn rewrite(&self, ctx: &mut RequestCtx<'_>) -> Flow;

    /// Runs after routing, before the upstream is contacted: authentication, limits, termination.
    fn access(&self, ctx: &mut RequestCtx<'_>) -> Flow;

    /// Runs when the response head is known (from the upstream or a plugin); may edit status and headers.
    fn header_filter(&self, ctx: &mut RequestCtx<'_>, response: &mut http::response::Parts);

    /// Runs on each response body chunk; `eof` marks the last one.
    fn body_filter(&self, ctx: &mut RequestCtx<'_>, chunk: &mut Bytes, eof: bool);

    /// Runs after the response was sent (or the request failed); must not block: hand work to a queue.
    fn log(&self, ctx: &RequestCtx<'_>, record: &LogRecord);

    /// Runs when an L4 stream session ends (Kong's `log` phase in the stream subsystem), for instances
    /// that list the session's protocol; must not block either.
    fn stream_log(&self, session: &SessionRecord<'_>);

    /// A rewrite handler is registered: a global instance then runs before the router (Kong's `rewrite`).
    fn has_rewrite(&self) -> bool;

    /// An access handler is registered. A chain with none, and nothing but log handlers besides, takes
    /// the proxy's log-only path (no plugin context until the log phase).
    fn has_access(&self) -> bool;

    /// A header_filter handler is registered. When no plugin of a chain reads the request after `access`
    /// (header_filter, body_filter, log), the proxy moves the request head to the upstream instead of
    /// copying it.
    fn has_header_filter(&self) -> bool;

    /// A body_filter handler is registered; the proxy skips the per-chunk call otherwise.
    fn has_body_filter(&self) -> bool;

    /// A log handler is registered: the proxy keeps a request's context past the response head only for
    /// chains that log or filter bodies.
    fn has_log(&self) -> bool;

    /// A stream_log handler is registered: the instance is loaded for stream routes when its `protocols`
    /// list a stream protocol.
    fn has_stream_log(&self) -> bool;

    /// The plugin needs the whole request body in [`RequestCtx::body`] during `access` (e.g. key-auth
    /// with `key_in_body`). The proxy buffers the body only when some plugin says so.
    fn needs_request_body(&self) -> bool;

    /// Of a plugin that [`needs_request_body`](Plugin::needs_request_body): whether it reads this request's
    /// body, asked before `access` with the request head (oauth2 reads it only for its endpoints and for a
    /// token looked for in the parameters). A body no plugin wants streams to the upstream unread.
    fn wants_request_body(&self, req: &http::request::Parts) -> bool;

    /// Some for plugins the proxy serves itself at fixed points instead of through the chain (prometheus):
    /// the instance is resolved per route by Kong's precedence and never runs as a phase handler, so a
    /// route with only such plugins keeps the fast path.
    fn metrics_flags(&self) -> Option<sluice_metrics::Flags>;
}

mod sealed {
    pub trait Sealed {}
    impl<P> Sealed for super::Registered<P> {}
}

type Handler<P> = for<'a, 's> fn(&P, &'a mut RequestCtx<'s>) -> Flow;
type HeaderHandler<P> = for<'a, 's> fn(&P, &'a mut RequestCtx<'s>, &mut http::response::Parts);
type BodyHandler<P> = for<'a, 's> fn(&P, &'a mut RequestCtx<'s>, &mut Bytes, bool);
type LogHandler<P> = for<'a, 's> fn(&P, &'a RequestCtx<'s>, &LogRecord);
type StreamLogHandler<P> = for<'a, 's> fn(&P, &'a SessionRecord<'s>);
type BodyWanted<P> = fn(&P, &http::request::Parts) -> bool;

/// A plugin's state `P` with the handlers it registered, phase by phase:
/// `Registered::new("cors", cors).access(Cors::access).header_filter(Cors::header_filter).build()`.
pub struct Registered<P> {
    name: &'static str,
    plugin: P,
    rewrite: Option<Handler<P>>,
    access: Option<Handler<P>>,
    header_filter: Option<HeaderHandler<P>>,
    body_filter: Option<BodyHandler<P>>,
    log: Option<LogHandler<P>>,
    stream_log: Option<StreamLogHandler<P>>,
    needs_request_body: bool,
    /// When set, which requests' bodies the plugin reads (else every request's, with `needs_request_body`).
    body_wanted: Option<BodyWanted<P>>,
    metrics: Option<sluice_metrics::Flags>,
}

impl<P: Send + Sync + 'static> Registered<P> {
    /// `plugin` under Kong's `name`, with no phase yet.
    pub fn new(name: &'static str, plugin: P) -> Self {
        Registered {
            name,
            plugin,
            rewrite: None,
            access: None,
            header_filter: None,
            body_filter: None,
            log: None,
            stream_log: None,
            needs_request_body: false,
            body_wanted: None,
            metrics: None,
        }
    }

    pub fn rewrite(mut self, handler: Handler<P>) -> Self {
        self.rewrite = Some(handler);
        self
    }

    pub fn access(mut self, handler: Handler<P>) -> Self {
        self.access = Some(handler);
        self
    }

    pub fn header_filter(mut self, handler: HeaderHandler<P>) -> Self {
        self.header_filter = Some(handler);
        self
    }

    pub fn body_filter(mut self, handler: BodyHandler<P>) -> Self {
        self.body_filter = Some(handler);
        self
    }

    pub fn log(mut self, handler: LogHandler<P>) -> Self {
        self.log = Some(handler);
        self
    }

    /// The `log` phase of stream sessions (the plugins Kong runs in its stream subsystem).
    pub fn stream_log(mut self, handler: StreamLogHandler<P>) -> Self {
        self.stream_log = Some(handler);
        self
    }

    /// The access handler reads [`RequestCtx::body`] (decided per config: key-auth's `key_in_body`).
    pub fn reads_request_body(mut self, reads: bool) -> Self {
        self.needs_request_body = reads;
        self
    }

    /// The access handler reads [`RequestCtx::body`] of the requests `wanted` says, decided from the head.
    pub fn reads_request_body_when(mut self, wanted: BodyWanted<P>) -> Self {
        self.needs_request_body = true;
        self.body_wanted = Some(wanted);
        self
    }

    /// The proxy records this plugin's metrics itself (prometheus); it has no phase handler.
    pub fn metrics(mut self, flags: sluice_metrics::Flags) -> Self {
        self.metrics = Some(flags);
        self
    }

    pub fn build(self) -> std::sync::Arc<dyn Plugin> {
        std::sync::Arc::new(self)
    }
}

impl<P: Send + Sync + 'static> Plugin for Registered<P> {
    fn name(&self) -> &'static str {
        self.name
    }

    #[inline]
    fn rewrite(&self, ctx: &mut RequestCtx<'_>) -> Flow {
        self.rewrite
            .map_or(Flow::Continue, |h| h(&self.plugin, ctx))
    }

    #[inline]
    fn access(&self, ctx: &mut RequestCtx<'_>) -> Flow {
        self.access.map_or(Flow::Continue, |h| h(&self.plugin, ctx))
    }

    fn header_filter(&self, ctx: &mut RequestCtx<'_>, response: &mut http::response::Parts) {
        if let Some(h) = self.header_filter {
            h(&self.plugin, ctx, response);
        }
    }

    fn body_filter(&self, ctx: &mut RequestCtx<'_>, chunk: &mut Bytes, eof: bool) {
        if let Some(h) = self.body_filter {
            h(&self.plugin, ctx, chunk, eof);
        }
    }

    fn log(&self, ctx: &RequestCtx<'_>, record: &LogRecord) {
        if let Some(h) = self.log {
            h(&self.plugin, ctx, record);
        }
    }

    fn stream_log(&self, session: &SessionRecord<'_>) {
        if let Some(h) = self.stream_log {
            h(&self.plugin, session);
        }
    }

    fn has_rewrite(&self) -> bool {
        self.rewrite.is_some()
    }

    fn has_access(&self) -> bool {
        self.access.is_some()
    }

    fn has_header_filter(&self) -> bool {
        self.header_filter.is_some()
    }

    fn has_body_filter(&self) -> bool {
        self.body_filter.is_some()
    }

    fn has_log(&self) -> bool {
        self.log.is_some()
    }

    fn has_stream_log(&self) -> bool {
        self.stream_log.is_some()
    }

    fn needs_request_body(&self) -> bool {
        self.needs_request_body
    }

    fn wants_request_body(&self, req: &http::request::Parts) -> bool {
        self.needs_request_body && self.body_wanted.is_none_or(|f| f(&self.plugin, req))
    }

    fn metrics_flags(&self) -> Option<sluice_metrics::Flags> {
        self.metrics
    }
}

#[cfg(test)]
mod tests;
