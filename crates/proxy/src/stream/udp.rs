//! UDP stream sessions: one per client address, as nginx's stream proxy keeps them. The first datagram
//! of a client routes it (`udp` routes), runs ip-restriction and opens a socket to a target; later ones
//! follow on that socket, and the target's answers go back to the client from the listening socket. A
//! session ends when no datagram moved either way for the service's `read_timeout`; then (or at once,
//! for a refused or unroutable client) it ends in the log phase.
//!
//! The destination address routes match against is the listener's address (a wildcard bind shows as
//! `0.0.0.0`; the datagram's own destination address is not read).

use super::connect::{self, Kind, Opened};
use super::finish::Session;
use crate::shared::Shared;
use bytes::Bytes;
use sluice_router::stream::{StreamParts, StreamProtocols};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::UdpSocket;
use tokio::sync::mpsc::{self, error::TrySendError};

/// Datagrams queued for a session before later ones are dropped (as a congested path would).
const QUEUE: usize = 256;

/// How long a refused or unroutable client's datagrams are dropped before it is looked at again.
const REFUSED_FOR: Duration = Duration::from_secs(10);

pub(super) async fn serve(socket: UdpSocket, shared: Arc<Shared>) {
    let socket = Arc::new(socket);
    let Ok(local) = socket.local_addr() else {
        return;
    };
    let mut sessions: HashMap<SocketAddr, mpsc::Sender<Bytes>> = HashMap::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let (n, peer) = match socket.recv_from(&mut buf).await {
            Ok(x) => x,
            Err(e) => {
                tracing::debug!(error = %e, "stream UDP receive failed");
                continue;
            }
        };
        let mut datagram = Bytes::copy_from_slice(&buf[..n]);
        if let Some(tx) = sessions.get(&peer) {
            match tx.try_send(datagram) {
                Ok(()) | Err(TrySendError::Full(_)) => continue,
                Err(TrySendError::Closed(d)) => datagram = d,
            }
        }
        if sessions.len() >= 1024 {
            sessions.retain(|_, tx| !tx.is_closed());
        }
        let (tx, rx) = mpsc::channel(QUEUE);
        let _ = tx.try_send(datagram);
        sessions.insert(peer, tx);
        tokio::spawn(session(socket.clone(), peer, local, rx, shared.clone()));
    }
}

async fn session(
    listener: Arc<UdpSocket>,
    peer: SocketAddr,
    local: SocketAddr,
    mut rx: mpsc::Receiver<Bytes>,
    shared: Arc<Shared>,
) {
    let snapshot = shared.snapshot.load_full();
    let mut s = Session::new(peer, local, StreamProtocols::UDP);
    let parts = StreamParts {
        accepts: StreamProtocols::UDP,
        source: peer,
        destination: local,
        sni: None,
    };
    s.route = snapshot.streams.router.find(&parts);
    let route = s.route.map(|i| &snapshot.streams.routes[i]);
    let svc = route.and_then(|r| r.service.and_then(|i| snapshot.services.get(i)));
    let opened = match (route, svc) {
        (Some(r), _) if r.refuses(StreamProtocols::UDP, peer.ip()) => {
            tracing::info!(%peer, "UDP client refused by ip-restriction");
            s.status = 403;
            None
        }
        (Some(_), Some(svc)) => {
            match connect::open(svc, peer.ip(), Kind::Udp, &mut s.tries).await {
                Some(Opened::Udp(socket)) => Some((socket, svc)),
                _ => {
                    s.status = 502;
                    None
                }
            }
        }
        (Some(_), None) => {
            s.status = 503;
            None
        }
        (None, _) => {
            tracing::info!(%peer, "no UDP stream route found with those values");
            None
        }
    };
    let Some((upstream, svc)) = opened else {
        s.finish(&snapshot);
        // Drop this client's datagrams for a while instead of routing each one again.
        while let Ok(Some(_)) = tokio::time::timeout(REFUSED_FOR, rx.recv()).await {}
        return;
    };
    s.status = 200;
    copy(&listener, &upstream, &mut rx, svc.read_timeout, &mut s).await;
    s.finish(&snapshot);
}

/// Datagrams both ways until the session is idle for `idle` (or the listener task is gone), counted in
/// `s`.
async fn copy(
    listener: &UdpSocket,
    upstream: &UdpSocket,
    rx: &mut mpsc::Receiver<Bytes>,
    idle: Duration,
    s: &mut Session,
) {
    let peer = s.peer;
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        tokio::select! {
            datagram = rx.recv() => match datagram {
                Some(d) => {
                    if upstream.send(&d).await.is_ok() {
                        s.from_client += d.len() as u64;
                    }
                }
                None => return,
            },
            // An error is an ICMP unreachable from the target: the session goes on, as nginx's does.
            answer = upstream.recv(&mut buf) => if let Ok(n) = answer {
                if listener.send_to(&buf[..n], peer).await.is_ok() {
                    s.to_client += n as u64;
                }
            },
            () = tokio::time::sleep(idle) => {
                tracing::debug!(%peer, "UDP stream session idle, closed");
                return;
            }
        }
    }
}
