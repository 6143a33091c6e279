//! A route's plugins in PRIORITY order, and the phase runners the proxy calls.

use crate::ctx::{LogRecord, RequestCtx};
use crate::plugin::{Flow, Plugin};
use crate::response::PluginResponse;
use bytes::Bytes;
use std::collections::HashMap;
use std::sync::Arc;
use uuid::Uuid;

/// One plugin name in a chain: the config that applies without a consumer, and consumer-specific overrides
/// (only those more specific than the default, by Kong's precedence).
pub(crate) struct ChainEntry {
    pub priority: i32,
    pub default: Option<Arc<dyn Plugin>>,
    pub by_consumer: HashMap<Uuid, Arc<dyn Plugin>>,
    /// The default is a global plugin (so it also runs in the rewrite phase).
    pub global: bool,
}

impl ChainEntry {
    fn pick(&self, consumer: Option<&Uuid>) -> Option<&Arc<dyn Plugin>> {
        if !self.by_consumer.is_empty() {
            if let Some(p) = consumer.and_then(|c| self.by_consumer.get(c)) {
                return Some(p);
            }
        }
        self.default.as_ref()
    }
}

/// The plugins that may run for one route, highest priority first.
#[derive(Default)]
pub struct PluginChain {
    entries: Vec<ChainEntry>,
    needs_request_body: bool,
    has_body_filter: bool,
}

impl PluginChain {
    pub(crate) fn new(entries: Vec<ChainEntry>) -> Self {
        let all = || {
            entries
                .iter()
                .flat_map(|e| e.default.iter().chain(e.by_consumer.values()))
        };
        let needs_request_body = all().any(|p| p.needs_request_body());
        let has_body_filter = all().any(|p| p.has_body_filter());
        PluginChain {
            entries,
            needs_request_body,
            has_body_filter,
        }
    }

    /// No plugin at all: the proxy skips every phase.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn needs_request_body(&self) -> bool {
        self.needs_request_body
    }

    pub fn has_body_filter(&self) -> bool {
        self.has_body_filter
    }

    /// The priorities in run order (for tests and docs).
    pub fn priorities(&self) -> Vec<i32> {
        self.entries.iter().map(|e| e.priority).collect()
    }

    /// Runs `rewrite` (global plugins) then `access`; `Some` means answer with that response.
    pub async fn access(&self, ctx: &mut RequestCtx<'_>) -> Option<PluginResponse> {
        for entry in self.entries.iter().filter(|e| e.global) {
            if let Some(p) = entry.default.as_ref() {
                if let Some(resp) = settle(p.rewrite(ctx)).await {
                    return Some(resp);
                }
            }
        }
        for entry in &self.entries {
            let consumer = ctx.consumer.map(|c| c.id);
            let Some(p) = entry.pick(consumer.as_ref()) else {
                continue;
            };
            if let Some(resp) = settle(p.access(ctx)).await {
                return Some(resp);
            }
        }
        None
    }

    pub fn header_filter(&self, ctx: &mut RequestCtx<'_>, resp: &mut http::response::Parts) {
        for entry in &self.entries {
            let consumer = ctx.consumer.map(|c| c.id);
            if let Some(p) = entry.pick(consumer.as_ref()) {
                p.header_filter(ctx, resp);
            }
        }
    }

    pub fn body_filter(&self, ctx: &mut RequestCtx<'_>, chunk: &mut Bytes, eof: bool) {
        if !self.has_body_filter {
            return;
        }
        for entry in &self.entries {
            let consumer = ctx.consumer.map(|c| c.id);
            if let Some(p) = entry
                .pick(consumer.as_ref())
                .filter(|p| p.has_body_filter())
            {
                p.body_filter(ctx, chunk, eof);
            }
        }
    }

    pub fn log(&self, ctx: &RequestCtx<'_>, record: &LogRecord) {
        let consumer = ctx.consumer.map(|c| c.id);
        for entry in &self.entries {
            if let Some(p) = entry.pick(consumer.as_ref()) {
                p.log(ctx, record);
            }
        }
    }
}

/// Resolves a [`Flow`], awaiting deferred work; `Some` means stop with that response.
async fn settle(mut flow: Flow) -> Option<PluginResponse> {
    loop {
        match flow {
            Flow::Continue => return None,
            Flow::Respond(r) => return Some(r),
            Flow::Defer(fut) => flow = fut.await,
        }
    }
}
