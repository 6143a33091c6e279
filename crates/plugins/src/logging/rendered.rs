//! One rendering of a request's log record per log pass, shared by the chain's plugins that send the
//! plain record (http-log, file-log, tcp-log, udp-log): the first of them serializes it, the others
//! queue the same bytes (a reference count, not a second 2 kB serialization on the worker).
//!
//! A pass is one [`crate::PluginChain::log`] call, which calls [`begin_pass`] before its handlers run.
//! Sharing is only set up when the config has several such loggers ([`EntityJson::count_logger`]): with
//! one, its record goes to the queue as it is, without the extra reference kept here.

#[cfg(test)]
mod tests;

use super::entities::EntityJson;
use super::queue;
use super::serialize::serialize;
use crate::ctx::{LogRecord, RequestCtx};
use bytes::Bytes;
use std::cell::{Cell, RefCell};

/// What one pass rendered, and for which context, record and snapshot (the addresses guard a handler
/// called outside a chain's pass, e.g. by a test, from being handed another record's bytes).
struct Rendered {
    pass: u64,
    ctx: usize,
    record: usize,
    entities: usize,
    bytes: Bytes,
}

thread_local! {
    /// The number of the current log pass on this thread.
    static PASS: Cell<u64> = const { Cell::new(0) };
    /// The last record rendered on this thread (one record: the current pass's, or a finished one).
    static LAST: RefCell<Option<Rendered>> = const { RefCell::new(None) };
}

/// Starts a log pass: records rendered before are not handed out again.
pub fn begin_pass() {
    PASS.set(PASS.get().wrapping_add(1));
}

/// The request's record as queued bytes: rendered now, or the bytes another logger of this pass rendered.
pub(crate) fn record(ctx: &RequestCtx<'_>, record: &LogRecord, entities: &EntityJson) -> Bytes {
    if !entities.has_several_loggers() {
        return queue::record(serialize(ctx, record, entities));
    }
    let key = (
        PASS.get(),
        ctx as *const RequestCtx<'_> as usize,
        record as *const LogRecord as usize,
        entities as *const EntityJson as usize,
    );
    let same = |r: &Rendered| (r.pass, r.ctx, r.record, r.entities) == key;
    if let Some(bytes) =
        LAST.with_borrow(|last| last.as_ref().filter(|r| same(r)).map(|r| r.bytes.clone()))
    {
        return bytes;
    }
    let bytes = queue::record(serialize(ctx, record, entities));
    let (pass, ctx, record, entities) = key;
    LAST.set(Some(Rendered {
        pass,
        ctx,
        record,
        entities,
        bytes: bytes.clone(),
    }));
    bytes
}
