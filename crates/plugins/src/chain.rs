//! A route's plugins in PRIORITY order, and the phase runners the proxy calls.

use crate::ctx::{LogRecord, RequestCtx};
use crate::plugin::{Deferred, Flow, Plugin};
use crate::protocols::Protocols;
use crate::response::PluginResponse;
use bytes::Bytes;
use std::collections::HashMap;
use std::sync::Arc;
use uuid::Uuid;

/// One configured instance in a chain, with the request protocols it runs for.
#[derive(Clone)]
pub(crate) struct Slot {
    pub plugin: Arc<dyn Plugin>,
    pub protocols: Protocols,
}

/// One plugin name in a chain: the config that applies without a consumer, and consumer-specific overrides
/// (only those more specific than the default, by Kong's precedence).
pub(crate) struct ChainEntry {
    pub priority: i32,
    pub default: Option<Slot>,
    pub by_consumer: HashMap<Uuid, Slot>,
    /// The default is a global plugin (so it may run in the rewrite phase, before routing).
    pub global: bool,
}

impl ChainEntry {
    /// The config for this consumer, if it runs for a request of protocol `proto` (the most specific config
    /// decides; a narrower `protocols` does not fall back to a less specific one).
    fn pick(&self, consumer: Option<&Uuid>, proto: Protocols) -> Option<&Arc<dyn Plugin>> {
        let by_consumer = consumer.filter(|_| !self.by_consumer.is_empty());
        let slot = match by_consumer.and_then(|c| self.by_consumer.get(c)) {
            Some(s) => Some(s),
            None => self.default.as_ref(),
        }?;
        slot.protocols.allows(proto).then_some(&slot.plugin)
    }
}

/// The plugins that may run for one route, highest priority first.
#[derive(Default)]
pub struct PluginChain {
    entries: Vec<ChainEntry>,
    needs_request_body: bool,
    has_access: bool,
    has_body_filter: bool,
    has_header_filter: bool,
    has_log: bool,
    /// Some plugin logs, and none has any other phase or reads the request body.
    only_logs: bool,
    /// Plugins act in `access` only: none has `header_filter`, `body_filter` or `log`, or reads the body.
    access_only: bool,
    /// Some global instance registered `rewrite`.
    has_rewrite: bool,
    /// Some instance runs only for some protocols, so requests' protocols must be checked.
    restricted: bool,
}

impl PluginChain {
    pub(crate) fn new(entries: Vec<ChainEntry>) -> Self {
        let all = || {
            entries
                .iter()
                .flat_map(|e| e.default.iter().chain(e.by_consumer.values()))
        };
        let needs_request_body = all().any(|s| s.plugin.needs_request_body());
        let has_access = all().any(|s| s.plugin.has_access());
        let has_body_filter = all().any(|s| s.plugin.has_body_filter());
        let has_header_filter = all().any(|s| s.plugin.has_header_filter());
        let has_log = all().any(|s| s.plugin.has_log());
        let has_rewrite = entries
            .iter()
            .filter(|e| e.global)
            .any(|e| e.default.as_ref().is_some_and(|s| s.plugin.has_rewrite()));
        let restricted = all().any(|s| s.protocols != Protocols::ALL);
        let only_logs = has_log
            && !has_rewrite
            && !needs_request_body
            && all().all(|s| {
                !s.plugin.has_access()
                    && !s.plugin.has_header_filter()
                    && !s.plugin.has_body_filter()
                    && !s.plugin.has_rewrite()
            });
        let access_only = !needs_request_body && !has_body_filter && !has_header_filter && !has_log;
        PluginChain {
            entries,
            access_only,
            needs_request_body,
            has_access,
            has_body_filter,
            has_header_filter,
            has_log,
            only_logs,
            has_rewrite,
            restricted,
        }
    }

    /// No plugin at all: the proxy skips every phase.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Some plugin of the chain may read request bodies ([`PluginChain::wants_request_body`] tells which).
    pub fn needs_request_body(&self) -> bool {
        self.needs_request_body
    }

    /// Some plugin of the chain reads this request's body, so the proxy buffers it before `access`.
    pub fn wants_request_body(&self, req: &http::request::Parts) -> bool {
        self.needs_request_body
            && (self.entries.iter())
                .flat_map(|e| e.default.iter().chain(e.by_consumer.values()))
                .any(|s| s.plugin.wants_request_body(req))
    }

    /// Some plugin runs in `access`, where it may answer: the proxy then runs it before anything else
    /// of the request is built.
    pub fn has_access(&self) -> bool {
        self.has_access
    }

    pub fn has_body_filter(&self) -> bool {
        self.has_body_filter
    }

    /// Some global instance runs in the rewrite phase (the driver then runs [`Self::rewrite`] before routing).
    pub fn has_rewrite(&self) -> bool {
        self.has_rewrite
    }

    /// Some plugin runs in the log phase.
    pub fn has_log(&self) -> bool {
        self.has_log
    }

    /// Some plugin logs and no plugin has any other phase (no `rewrite`, `access`, `header_filter` or
    /// `body_filter`) or reads the request body: the proxy then writes the upstream request at once and
    /// builds a plugin context only for the log phase.
    pub fn only_logs(&self) -> bool {
        self.only_logs
    }

    /// The plugins act in `access` only (authentication, limits, termination, request edits): nothing of
    /// the request's context is needed after it but the headers plugins add to the response and the
    /// consumer, so the proxy runs `access` at once and goes on as for a route without plugins.
    pub fn access_only(&self) -> bool {
        self.access_only
    }

    /// The request's protocol, looked at only when some instance is restricted (any protocol passes otherwise).
    fn protocol(&self, ctx: &RequestCtx<'_>) -> Protocols {
        if self.restricted {
            Protocols::of(ctx)
        } else {
            Protocols::HTTP
        }
    }

    /// The priorities in run order (for tests and docs).
    pub fn priorities(&self) -> Vec<i32> {
        self.entries.iter().map(|e| e.priority).collect()
    }

    /// Runs `rewrite` of the global instances, before routing (`ctx.route` is None); `Some` means answer
    /// with that response. Called on the global chain only.
    pub async fn rewrite(&self, ctx: &mut RequestCtx<'_>) -> Option<PluginResponse> {
        let proto = self.protocol(ctx);
        for entry in self.entries.iter().filter(|e| e.global) {
            if let Some(p) = entry.pick(None, proto).filter(|p| p.has_rewrite()) {
                let flow = p.rewrite(ctx);
                if let Some(resp) = settle(flow, ctx).await {
                    return Some(resp);
                }
            }
        }
        None
    }

    /// Runs `access`; `Some` means answer with that response.
    pub async fn access(&self, ctx: &mut RequestCtx<'_>) -> Option<PluginResponse> {
        let now = self.access_now(ctx, 0);
        self.finish_access(ctx, now).await
    }

    /// The rest of `access` from where [`Self::access_now`] stopped; `Some` means answer with that response.
    pub async fn finish_access(
        &self,
        ctx: &mut RequestCtx<'_>,
        mut now: AccessNow,
    ) -> Option<PluginResponse> {
        loop {
            match now {
                AccessNow::Continue => return None,
                AccessNow::Respond(resp) => return Some(resp),
                AccessNow::Deferred { next, future } => {
                    if let Some(resp) = settle(future.await, ctx).await {
                        return Some(resp);
                    }
                    now = self.access_now(ctx, next);
                }
            }
        }
    }

    /// Runs `access` from the `from`th entry on, without waiting: it stops at the first handler whose
    /// work must wait ([`Flow::Defer`]) and hands that back with where to go on once it is done. A chain
    /// whose handlers all answer at once is taken through `access` before the proxy's future exists.
    pub fn access_now(&self, ctx: &mut RequestCtx<'_>, from: usize) -> AccessNow {
        let proto = self.protocol(ctx);
        for (i, entry) in self.entries.iter().enumerate().skip(from) {
            let consumer = ctx.consumer.map(|c| c.id);
            let Some(p) = entry.pick(consumer.as_ref(), proto) else {
                continue;
            };
            match settle_now(p.access(ctx), ctx) {
                Settled::GoOn => {}
                Settled::Answer(resp) => return AccessNow::Respond(resp),
                Settled::Wait(future) => {
                    return AccessNow::Deferred {
                        next: i + 1,
                        future,
                    }
                }
            }
        }
        AccessNow::Continue
    }

    pub fn header_filter(&self, ctx: &mut RequestCtx<'_>, resp: &mut http::response::Parts) {
        if !self.has_header_filter {
            return;
        }
        let proto = self.protocol(ctx);
        for entry in &self.entries {
            let consumer = ctx.consumer.map(|c| c.id);
            if let Some(p) = entry
                .pick(consumer.as_ref(), proto)
                .filter(|p| p.has_header_filter())
            {
                p.header_filter(ctx, resp);
            }
        }
    }

    pub fn body_filter(&self, ctx: &mut RequestCtx<'_>, chunk: &mut Bytes, eof: bool) {
        if !self.has_body_filter {
            return;
        }
        let proto = self.protocol(ctx);
        for entry in &self.entries {
            let consumer = ctx.consumer.map(|c| c.id);
            if let Some(p) = entry
                .pick(consumer.as_ref(), proto)
                .filter(|p| p.has_body_filter())
            {
                p.body_filter(ctx, chunk, eof);
            }
        }
    }

    pub fn log(&self, ctx: &RequestCtx<'_>, record: &LogRecord) {
        crate::logging::rendered::begin_pass();
        let consumer = ctx.consumer.map(|c| c.id);
        let proto = self.protocol(ctx);
        for entry in &self.entries {
            if let Some(p) = entry.pick(consumer.as_ref(), proto) {
                p.log(ctx, record);
            }
        }
    }
}

/// Where [`PluginChain::access_now`] stopped.
pub enum AccessNow {
    /// Every handler let the request go on.
    Continue,
    /// A handler answered: the request stops here.
    Respond(PluginResponse),
    /// A handler's work must wait: await `future`, settle its flow, then go on from entry `next`.
    Deferred { next: usize, future: Deferred },
}

/// A [`Flow`] resolved as far as it goes without waiting.
enum Settled {
    GoOn,
    Answer(PluginResponse),
    /// Deferred work to await; its flow is to be settled in turn.
    Wait(Deferred),
}

/// Resolves a [`Flow`] without waiting: applies what it hands to the context, and stops at deferred work.
fn settle_now(mut flow: Flow, ctx: &mut RequestCtx<'_>) -> Settled {
    loop {
        match flow {
            Flow::Continue => return Settled::GoOn,
            Flow::ContinueWith(headers) => {
                ctx.response_headers.extend(headers);
                return Settled::GoOn;
            }
            Flow::Respond(r) => return Settled::Answer(r),
            Flow::Then(apply) => flow = apply(ctx),
            Flow::Defer(future) => return Settled::Wait(future),
        }
    }
}

/// Resolves a [`Flow`], awaiting deferred work; `Some` means stop with that response.
async fn settle(mut flow: Flow, ctx: &mut RequestCtx<'_>) -> Option<PluginResponse> {
    loop {
        match settle_now(flow, ctx) {
            Settled::GoOn => return None,
            Settled::Answer(r) => return Some(r),
            Settled::Wait(future) => flow = future.await,
        }
    }
}
