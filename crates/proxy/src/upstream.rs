//! Sending a request to a service: pick a target, get a pooled connection, send, and retry on another
//! target while retrying is safe, up to the service's `retries`.
//!
//! Safe means the request was not sent at all (connect refused or timed out), or the request has no body
//! and no byte of an answer came back while the connection was either reused or the method is idempotent
//! (an upstream that accepts and resets). A pooled connection that turns out closed is not held against the
//! target nor counted as a try, as nginx does with its cached connections; idle connections are checked
//! before use, so this is rare. A read or write timeout is never retried: the upstream may be acting on the
//! request. The wait for the response head is `read_timeout` for body-less requests; a request with a body
//! has nginx's meaning instead: each write (and each wait for the client's next bytes) within
//! `write_timeout`, then each read of the head within `read_timeout`, however long the whole upload takes.
//!
//! Each try picks a target not tried yet when one is usable, and reports its outcome to the upstream's
//! passive health check ([`report`]); the answer carries the target's in-flight guard.

use crate::error::ProxyError;
use crate::snapshot::ServiceInfo;
use http::HeaderValue;
use sluice_h1::ResponseHead;
use sluice_plugins::TryRecord;
use sluice_upstream::conn::{Failed, Gap};
use sluice_upstream::health::{Failure, InFlight, TargetState};
use sluice_upstream::pool::{self, Conn, PoolKey};
use sluice_upstream::tls::UpstreamTls;
use sluice_upstream::wire::WireRequest;
use std::time::Instant;

/// The upstream's answer and the connection it came on.
pub struct Answer {
    pub head: ResponseHead,
    pub conn: Conn,
    /// When the request that got this answer was sent (start of the upstream latency).
    pub sent_at: Instant,
    /// Counts the request against the target until the response body is done (only for the algorithms
    /// that read in-flight counts).
    pub inflight: Option<InFlight>,
    pub tries: Tries,
}

/// The targets one request tried, for the log phase (Kong's `tries`).
#[derive(Debug, Clone)]
pub struct Tries {
    /// Tries that failed before the one that answered (allocated only when one failed).
    pub failed: Vec<TryRecord>,
    pub answered: TryRecord,
}

/// Sends `req` to one of the service's targets, with Kong's retries. `preserve_host` keeps the client's
/// `Host`; otherwise each try sends the target's. `hash` is the request's consistent-hashing value.
/// `started` is now, as the caller already read the clock (the first try starts then).
pub async fn send(
    req: &mut WireRequest,
    svc: &ServiceInfo,
    preserve_host: bool,
    hash: Option<u64>,
    started: Instant,
) -> Result<Answer, ProxyError> {
    let streamed = !req.bodyless();
    let head_request = req.method == http::Method::HEAD;
    let idempotent = req.method.is_idempotent();
    let mut tries = 0;
    // Targets of failed tries (allocated only when a try fails).
    let mut tried = Vec::new();
    let mut last = None;
    let mut failed = Vec::new();
    loop {
        tried.extend(last.take());
        let try_started = if tries == 0 { started } else { Instant::now() };
        let pick = svc.balancer.pick(hash, &tried).ok_or(ProxyError::NoPeer)?;
        last = Some(pick.index);
        let (peer, state) = (&pick.target.peer, &pick.target.state);
        let observe = |outcome| report(svc, &pick.target.name, state, outcome);
        let addr = peer.resolve().await?;
        let failed_try = |code| TryRecord {
            addr,
            started: try_started,
            latency: try_started.elapsed(),
            failed: Some(code),
        };
        let tracks = svc.balancer.tracks_load();
        let inflight = tracks.then(|| state.start());
        let host = match (preserve_host, &req.client_host) {
            (true, Some(h)) => h,
            _ => &peer.host_header,
        };
        let can_retry = tries < svc.retries;
        let (key, tls) = pool_key(svc, addr, host, &peer.host);
        let target = tls.as_ref().map(|(tls, name)| pool::TlsTarget {
            tls,
            server_name: name,
        });
        let checkout = pool::checkout(key, target, svc.connect_timeout, try_started).await;
        let mut conn = match checkout.map_err(ProxyError::from) {
            Ok(c) => c,
            Err(e) if can_retry => {
                observe(Err(failure(&e)));
                failed.push(failed_try(e.status().as_u16()));
                tracing::debug!(%addr, error = %e, tries, "connect failed, retrying");
                tries += 1;
                continue;
            }
            Err(e) => {
                observe(Err(failure(&e)));
                return Err(e);
            }
        };
        conn.upgrade = req.is_upgrade();
        let sent_at = Instant::now();
        // The connection's timer: taken out while the exchange borrows the connection, put back after.
        let mut deadline = std::mem::take(&mut conn.deadline);
        // The exchange is pinned where it is made, and the deadline given only the pin: moved into a
        // timeout and then into this future, the ~700-byte block was copied twice per request.
        let answered = {
            // Its own handle (a reference count): the request is written while it holds the client's.
            let host = host.clone();
            let exchange = std::pin::pin!(async {
                conn.write_request(host.as_bytes(), req, svc.write_timeout)
                    .await?;
                match streamed {
                    false => conn.read_head(head_request).await,
                    true => {
                        let gap = Gap::new(svc.read_timeout);
                        conn.read_head_gapped(head_request, Some(gap)).await
                    }
                }
            });
            if streamed {
                // Bounded by its progress instead (nginx's send and read timeouts between two steps), so a
                // long upload that keeps moving is never cut: no outer deadline.
                Ok(exchange.await)
            } else {
                // The connection's own timer (one per connection, not per request), due from the
                // instant just read.
                let due = (sent_at + svc.read_timeout).into();
                deadline.bound(due, exchange).await
            }
        };
        conn.deadline = deadline;
        match answered {
            Err(_) => {
                observe(Err(Failure::Timeout));
                return Err(ProxyError::Timeout);
            }
            Ok(Ok(response)) => {
                if tracks {
                    state.record_latency(sent_at.elapsed());
                }
                observe(Ok(response.status.as_u16()));
                let answered = TryRecord {
                    addr,
                    started: try_started,
                    latency: sent_at.saturating_duration_since(try_started),
                    failed: None,
                };
                return Ok(Answer {
                    head: response,
                    conn,
                    sent_at,
                    inflight,
                    tries: Tries { failed, answered },
                });
            }
            Ok(Err(Failed::NoAnswer)) if req.bodyless() && (conn.reused() || idempotent) => {
                if conn.reused() {
                    // A pooled connection the upstream closed while idle: not the target's fault and not a
                    // try (as nginx counts its cached connections); the next one comes from the pool or is new.
                    tracing::debug!(%addr, "pooled connection was closed, resending");
                    last = None;
                    continue;
                }
                observe(Err(Failure::Tcp));
                if !can_retry {
                    return Err(ProxyError::BadGateway);
                }
                tracing::debug!(%addr, tries, "upstream closed without answering, retrying");
                failed.push(failed_try(502));
                tries += 1;
            }
            // The client's body failed (framing, `client_body_timeout`, a plugin's cap): its answer is
            // `error.rs`'s; this upstream connection, holding half a request, is dropped, never pooled.
            Ok(Err(
                f @ (Failed::ClientBody
                | Failed::ClientTimeout
                | Failed::OverLimit
                | Failed::TooLarge),
            )) => return Err(f.into()),
            Ok(Err(Failed::Stalled)) => {
                observe(Err(Failure::Timeout));
                return Err(ProxyError::Timeout);
            }
            Ok(Err(e)) => {
                tracing::debug!(%addr, error = ?e, "upstream request failed");
                observe(Err(Failure::Tcp));
                return Err(ProxyError::BadGateway);
            }
        }
    }
}

/// The pool key of a connection to `addr` for `svc`, and its TLS server name. Kong sends the upstream
/// `Host` (without port) as SNI, so `preserve_host` names the client's.
#[inline]
pub(crate) fn pool_key<'a>(
    svc: &'a ServiceInfo,
    addr: std::net::SocketAddr,
    host: &'a HeaderValue,
    peer_host: &'a str,
) -> (
    PoolKey,
    Option<(&'a UpstreamTls, std::borrow::Cow<'a, str>)>,
) {
    match &svc.tls {
        None => (PoolKey { addr, tls: 0 }, None),
        Some(tls) => {
            let host = host.to_str().unwrap_or(peer_host);
            let server_name = sluice_upstream::forward::bare_host(host);
            let key = PoolKey {
                addr,
                tls: sluice_upstream::tls::pool_key(tls, &server_name),
            };
            (key, Some((tls, server_name)))
        }
    }
}

/// The kind of failure an error of connecting counts as.
pub(crate) fn failure(e: &ProxyError) -> Failure {
    match e {
        ProxyError::Timeout => Failure::Timeout,
        _ => Failure::Tcp,
    }
}

/// Feeds one try's outcome (a status, or a failure) to the upstream's passive check, logging a change.
pub(crate) fn report(
    svc: &ServiceInfo,
    target: &str,
    state: &TargetState,
    outcome: Result<u16, Failure>,
) {
    if !svc.checks.passive_on {
        return;
    }
    let rules = &svc.checks.passive;
    let changed = match outcome {
        Ok(status) => rules.report_status(state, status),
        Err(kind) => rules.report_failure(state, kind),
    };
    match changed {
        Some(true) => tracing::warn!(target, "target is healthy again (passive check)"),
        Some(false) => tracing::warn!(target, ?outcome, "target is unhealthy (passive check)"),
        None => {}
    }
}
