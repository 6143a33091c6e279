//! Balance and send for a WebSocket upgrade request ([`crate::upgrade`]): the upstream request carries
//! Kong's `Connection: keep-alive, Upgrade` and `Upgrade: websocket`, and is sent with the same retries as
//! any request. A 101 hands over the raw connection, which leaves the pool for good; any other answer is
//! an ordinary response.

use super::{decorated, proxied, Exchange, Proxied, Sending};
use crate::error::ProxyError;
use crate::respond::Timings;
use crate::snapshot::Snapshot;
use crate::upstream::{self, Tries};
use http::header::{HeaderValue, CONNECTION, UPGRADE};
use http::StatusCode;
use sluice_upstream::health::InFlight;
use sluice_upstream::pool::Conn;
use sluice_upstream::tunnel::Timeouts;
use std::time::Instant;

/// The upstream's answer to an upgrade request.
#[allow(clippy::large_enum_variant)]
pub enum Upgrade {
    /// It switched protocols: the tunnel comes next.
    Switched(Switched),
    /// Any other answer (a 4xx refusing the handshake, say), to be sent as an ordinary response.
    Refused(Proxied),
}

/// An upstream that answered 101.
pub struct Switched {
    /// The 101 head, decorated with Kong's headers, with `Connection: upgrade` and the upstream's
    /// `Upgrade` when it names the protocol asked for (Kong drops any other).
    pub head: http::response::Parts,
    /// The upstream connection, with whatever the upstream sent right behind its 101 still in its buffer.
    pub conn: Conn,
    pub timings: Timings,
    pub tries: Tries,
    /// Counts the tunnel against its target for as long as it is open (least-connections).
    pub inflight: Option<InFlight>,
    /// The service's read and write timeouts, which bound an idle or stalled tunnel.
    pub timeouts: Timeouts,
}

impl Sending {
    /// Makes the upstream request a WebSocket upgrade.
    pub fn upgrade_websocket(&mut self) {
        self.req.upgrade_websocket();
    }

    /// Sends an upgrade request (see [`Sending::send`] for `ready`): a 101 is [`Upgrade::Switched`],
    /// anything else an ordinary response.
    pub async fn send_upgrade(
        self,
        snap: &Snapshot,
        x: &Exchange<'_>,
        ready: Instant,
    ) -> Result<Upgrade, ProxyError> {
        let Sending {
            mut req,
            hashed,
            route,
            service,
        } = self;
        let (Some(info), Some(svc)) = (snap.routes.get(route), snap.services.get(service)) else {
            return Err(ProxyError::Internal);
        };
        let proxy_latency = ready.saturating_duration_since(x.started);
        let answer = upstream::send(&mut req, svc, info.preserve_host, hashed.value, ready).await?;
        let timings = Timings {
            proxy: proxy_latency,
            upstream: answer.sent_at.elapsed(),
        };
        if answer.head.status != StatusCode::SWITCHING_PROTOCOLS {
            let refused = proxied(answer, hashed.set_cookie, svc, x, timings);
            return Ok(Upgrade::Refused(refused));
        }
        let response = answer.head;
        let headers = response.fields.to_map();
        let upgrade = headers
            .get(UPGRADE)
            .filter(|v| v.as_bytes().eq_ignore_ascii_case(b"websocket"))
            .cloned();
        let mut head = decorated(
            response.status,
            response.version,
            headers,
            hashed.set_cookie,
            x,
            timings,
        );
        head.headers
            .insert(CONNECTION, HeaderValue::from_static("upgrade"));
        if let Some(upgrade) = upgrade {
            head.headers.insert(UPGRADE, upgrade);
        }
        Ok(Upgrade::Switched(Switched {
            head,
            conn: answer.conn,
            timings,
            tries: answer.tries,
            inflight: answer.inflight,
            timeouts: Timeouts {
                idle: svc.read_timeout,
                write: svc.write_timeout,
            },
        }))
    }
}
