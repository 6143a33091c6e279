//! Plugins on L4 stream sessions (Kong's `stream` subsystem). Kong runs one phase there that Sluice's
//! plugins implement: `log`, when a session ends, over the session's record ([`SessionRecord`]) instead of
//! a request's. (ip-restriction's `preread` is served by the stream proxy itself.)
//!
//! A plugin takes part by registering a `stream_log` handler ([`crate::Registered::stream_log`]). Which
//! instances run for a stream route is resolved when the snapshot is compiled ([`StreamChain`], built by
//! [`crate::CompiledPlugins`]): as Kong's stream subsystem, only instances listing some stream protocol
//! (`tcp`, `tls`, `tls_passthrough`, `udp`) are loaded, the most specific one per plugin name applies to a
//! route (consumers never: a stream has none), and it runs only for sessions of a protocol it lists.

use crate::ctx::TryRecord;
use crate::plugin::Plugin;
use sluice_model::{Route, Service};
use sluice_router::stream::StreamProtocols;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Instant, SystemTime};

/// What happened in one finished stream session: what Kong's stream log serializer reads from nginx's
/// stream variables.
#[derive(Debug, Clone)]
pub struct SessionRecord<'s> {
    /// The session's protocol (one of tcp, tls, tls_passthrough, udp).
    pub protocol: StreamProtocols,
    /// The matched route and its service (None before routing or without one).
    pub route: Option<&'s Route>,
    pub service: Option<&'s Service>,
    /// The client's address and port.
    pub client: SocketAddr,
    /// The port of the listener the session came in on (nginx's `$server_port`).
    pub server_port: u16,
    /// The TLS the gateway terminated (None for plain tcp, passthrough and udp).
    pub tls: Option<sluice_tls::Negotiated>,
    /// nginx's stream `$status`: 200 when proxied, 403 refused by a plugin, 500 no route or service,
    /// 502 no target could be connected.
    pub status: u16,
    /// Bytes read from the client (`$bytes_received`) and sent to it (`$bytes_sent`). The gateway copies
    /// them unchanged, so they are also what the target was sent (`$upstream_bytes_sent`) and what was read
    /// from it (`$upstream_bytes_received`).
    pub received: u64,
    pub sent: u64,
    /// When the session began (the clock, and the wall clock for `started_at`).
    pub started: Instant,
    pub started_wall: SystemTime,
    /// Milliseconds from the session's start until a target was connected (or the session ended).
    pub kong_latency_ms: u64,
    /// Milliseconds from the session's start to its end (`$session_time`).
    pub session_ms: u64,
    /// Every target tried, in order (empty when none was).
    pub tries: Vec<TryRecord>,
}

/// One instance in a stream chain, with the stream protocols it runs for.
pub(crate) struct StreamSlot {
    pub plugin: Arc<dyn Plugin>,
    pub protocols: StreamProtocols,
}

/// The instances whose `log` runs when a session of one stream route ends, highest priority first.
#[derive(Default)]
pub struct StreamChain {
    pub(crate) slots: Vec<StreamSlot>,
}

impl StreamChain {
    /// No instance applies: the session builds no record.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Runs the `log` phase of the instances that run for `session.protocol` (Kong's protocols filter).
    /// Each handler only serializes and queues; nothing here waits.
    pub fn log(&self, session: &SessionRecord<'_>) {
        for slot in &self.slots {
            if slot.protocols.intersects(session.protocol) {
                slot.plugin.stream_log(session);
            }
        }
    }

    /// The plugin names in run order (for tests).
    pub fn names(&self) -> Vec<&'static str> {
        self.slots.iter().map(|s| s.plugin.name()).collect()
    }
}
