//! Connecting a session to its service: a target from the balancer (hashing on the client address when
//! the upstream hashes on `ip`), `connect_timeout` per try, another target on failure up to the service's
//! `retries`, each outcome fed to the upstream's passive health check; TLS to the target when the
//! service's protocol is `tls`. Each try is recorded for the log phase (Kong's `tries`).

use crate::snapshot::ServiceInfo;
use sluice_plugins::TryRecord;
use sluice_upstream::balancer::{PickInput, Target};
use sluice_upstream::conn::{Conn, PoolKey, TlsTarget};
use sluice_upstream::health::Failure;
use std::net::{IpAddr, SocketAddr};
use std::time::Instant;
use tokio::net::UdpSocket;

/// Which kind of socket to open to the target.
pub(super) enum Kind<'a> {
    /// TCP, with TLS when the service has it; the server name is the client's when the route preserves
    /// the host (Kong sends `preserve_host`'s SNI), else the target's host.
    Tcp {
        client_sni: Option<&'a str>,
    },
    Udp,
}

/// An open socket to a target.
pub(super) enum Opened {
    Tcp(Conn),
    Udp(UdpSocket),
}

/// Opens a socket to one of the service's targets, with Kong's retries, each try pushed to `tries`;
/// None when no try succeeded.
pub(super) async fn open(
    svc: &ServiceInfo,
    client: IpAddr,
    kind: Kind<'_>,
    tries: &mut Vec<TryRecord>,
) -> Option<Opened> {
    let input = PickInput {
        client_ip: Some(client),
        ..PickInput::default()
    };
    let hash = svc.balancer.hash(&input).value;
    let mut tried = Vec::new();
    for _ in 0..=svc.retries {
        let pick = svc.balancer.pick(hash, &tried)?;
        tried.push(pick.index);
        let target = pick.target;
        let started = Instant::now();
        // The target's address once resolved (its port alone before).
        let mut addr = SocketAddr::new(IpAddr::from([0, 0, 0, 0]), target.peer.port);
        let outcome =
            tokio::time::timeout(svc.connect_timeout, try_one(svc, target, &kind, &mut addr)).await;
        let mut record = |failed| {
            tries.push(TryRecord {
                addr,
                started,
                latency: started.elapsed(),
                failed,
            })
        };
        match outcome {
            Ok(Ok(opened)) => {
                record(None);
                observe(svc, target, Ok(()));
                return Some(opened);
            }
            Ok(Err(e)) => {
                record(Some(502));
                tracing::debug!(target = %target.name, error = %e, "stream connect failed");
                observe(svc, target, Err(Failure::Tcp));
            }
            Err(_) => {
                record(Some(504));
                tracing::debug!(target = %target.name, "stream connect timed out");
                observe(svc, target, Err(Failure::Timeout));
            }
        }
    }
    None
}

async fn try_one(
    svc: &ServiceInfo,
    target: &Target,
    kind: &Kind<'_>,
    resolved: &mut SocketAddr,
) -> Result<Opened, String> {
    let addr = target.peer.resolve().await.map_err(|e| e.to_string())?;
    *resolved = addr;
    match kind {
        Kind::Udp => {
            let local: SocketAddr = match addr {
                SocketAddr::V4(_) => (std::net::Ipv4Addr::UNSPECIFIED, 0).into(),
                SocketAddr::V6(_) => (std::net::Ipv6Addr::UNSPECIFIED, 0).into(),
            };
            let socket = UdpSocket::bind(local).await.map_err(|e| e.to_string())?;
            socket.connect(addr).await.map_err(|e| e.to_string())?;
            Ok(Opened::Udp(socket))
        }
        Kind::Tcp { client_sni } => {
            let server_name = client_sni.unwrap_or(&target.peer.host);
            let tls = svc.tls.as_ref().map(|tls| TlsTarget { tls, server_name });
            let key = PoolKey {
                addr,
                tls: svc
                    .tls
                    .as_ref()
                    .map_or(0, |t| sluice_upstream::tls::pool_key(t, server_name)),
            };
            Conn::connect(key, tls)
                .await
                .map(Opened::Tcp)
                .map_err(|e| e.to_string())
        }
    }
}

/// Feeds a connect outcome to the passive health check, logging a change.
fn observe(svc: &ServiceInfo, target: &Target, outcome: Result<(), Failure>) {
    if !svc.checks.passive_on {
        return;
    }
    let rules = &svc.checks.passive;
    let changed = match outcome {
        Ok(()) => rules.report_success(&target.state),
        Err(kind) => rules.report_failure(&target.state, kind),
    };
    match changed {
        Some(true) => {
            tracing::warn!(target = %target.name, "target is healthy again (passive check)")
        }
        Some(false) => {
            tracing::warn!(target = %target.name, ?outcome, "target is unhealthy (passive check)")
        }
        None => {}
    }
}
