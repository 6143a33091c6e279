//! The end of a stream session (Kong's `log` phase in the stream subsystem): what a session gathered while
//! it ran ([`Session`]) becomes its log record for the log plugins that apply to its route, and its
//! observation for the route's prometheus series.
//!
//! Runs on the session's own task, after the last byte was copied, so the copy never waits for it; the
//! plugins only serialize and queue (their sinks run on the `sluice-log` thread). A session whose route
//! has neither builds nothing.

use super::compiled::StreamRoute;
use crate::snapshot::Snapshot;
use sluice_metrics::SessionObservation;
use sluice_plugins::{SessionRecord, TryRecord};
use sluice_router::stream::StreamProtocols;
use std::net::SocketAddr;
use std::time::{Instant, SystemTime};

/// What one session gathers while it runs, for its end.
pub(super) struct Session {
    pub started: Instant,
    pub started_wall: SystemTime,
    pub peer: SocketAddr,
    /// The listener's address (its port is `server_port`).
    pub local: SocketAddr,
    pub protocol: StreamProtocols,
    /// Index into the snapshot's stream routes, once routed.
    pub route: Option<usize>,
    /// The TLS the gateway terminated.
    pub tls: Option<sluice_tls::Negotiated>,
    pub tries: Vec<TryRecord>,
    /// nginx's stream `$status`: 500 until routed (no route), then as the session goes.
    pub status: u16,
    /// Bytes read from the client and sent on to the target.
    pub from_client: u64,
    /// Bytes read from the target and sent on to the client.
    pub to_client: u64,
}

impl Session {
    pub fn new(peer: SocketAddr, local: SocketAddr, protocol: StreamProtocols) -> Session {
        Session {
            started: Instant::now(),
            started_wall: SystemTime::now(),
            peer,
            local,
            protocol,
            route: None,
            tls: None,
            tries: Vec::new(),
            status: 500,
            from_client: 0,
            to_client: 0,
        }
    }

    /// The session ended: runs the log plugins of its route (or the global ones when it matched none)
    /// and records its metrics, on the snapshot it started on.
    pub fn finish(self, snapshot: &Snapshot) {
        let stream_route: Option<&StreamRoute> =
            self.route.and_then(|i| snapshot.streams.routes.get(i));
        let config_route = stream_route.map(|r| r.route);
        let plugins = snapshot.plugins.stream(config_route);
        let meter = stream_route.and_then(|r| r.meter.as_ref());
        if plugins.log.is_empty() && meter.is_none() {
            return;
        }
        let ms = |d: std::time::Duration| d.as_millis() as u64;
        let session_ms = ms(self.started.elapsed());
        // Kong's `latencies.kong`: the time before the balancer handed over a target.
        let kong_latency_ms = self.tries.first().map_or(session_ms, |t| {
            ms(t.started.saturating_duration_since(self.started))
        });
        if let Some(meter) = meter {
            let observation = SessionObservation {
                status: self.status,
                proxied: !self.tries.is_empty(),
                kong_ms: kong_latency_ms,
                session_ms,
            };
            meter.record(self.protocol, &observation);
        }
        if plugins.log.is_empty() {
            return;
        }
        let config = snapshot.config();
        let route = config_route.and_then(|i| config.routes.get(i));
        let service = stream_route
            .and_then(|r| r.service)
            .and_then(|s| config.services.get(s));
        let record = SessionRecord {
            protocol: self.protocol,
            route,
            service,
            client: self.peer,
            server_port: self.local.port(),
            tls: self.tls,
            status: self.status,
            received: self.from_client,
            sent: self.to_client,
            started: self.started,
            started_wall: self.started_wall,
            kong_latency_ms,
            session_ms,
            tries: self.tries,
        };
        plugins.log.log(&record);
    }
}
