//! Sending a request to a service: pick a target, get a pooled connection, send, and retry on another
//! target while retrying is safe, up to the service's `retries`.
//!
//! Safe means the request was not sent at all (connect refused or timed out, a connection found closed
//! before writing), or the request has no body and a reused keep-alive connection closed before answering
//! (the upstream's idle timeout raced with us). A read or write timeout is never retried: the upstream may
//! be acting on the request. The wait for the response head is `read_timeout` for body-less requests and
//! `write_timeout + read_timeout` when a body is streamed.

use crate::body::ProxyBody;
use crate::error::ProxyError;
use crate::pool::{self, Conn, PoolKey};
use crate::snapshot::ServiceInfo;
use http::header::HOST;
use http::{Request, Response};
use http_body::Body;
use hyper::body::Incoming;
use std::time::Instant;

/// The upstream's answer and the connection it came on.
pub struct Answer {
    pub response: Response<Incoming>,
    pub conn: Conn,
    /// When the request that got this answer was sent (start of the upstream latency).
    pub sent_at: Instant,
}

/// Sends `req` to one of the service's targets, with Kong's retries. `preserve_host` keeps the client's
/// `Host`; otherwise each try sets the target's.
pub async fn send(
    req: Request<ProxyBody>,
    svc: &ServiceInfo,
    preserve_host: bool,
) -> Result<Answer, ProxyError> {
    let bodyless = req.body().is_end_stream();
    let wait = if bodyless {
        svc.read_timeout
    } else {
        svc.read_timeout + svc.write_timeout
    };
    let mut pending = req;
    let mut tries = 0;
    loop {
        let peer = svc.balancer.pick().ok_or(ProxyError::NoPeer)?;
        let addr = peer.resolve().await?;
        let mut req = pending;
        if !preserve_host {
            req.headers_mut().insert(HOST, peer.host_header.clone());
        }
        let can_retry = tries < svc.retries;
        let (key, tls) = match &svc.tls {
            None => (PoolKey { addr, tls: 0 }, None),
            Some(tls) => {
                // Kong sends the upstream Host (without port) as SNI, so preserve_host names the client's.
                let host = req.headers().get(HOST).and_then(|h| h.to_str().ok());
                let server_name = crate::forward::bare_host(host.unwrap_or(&peer.host));
                let key = PoolKey {
                    addr,
                    tls: crate::tls::pool_key(tls, &server_name),
                };
                (key, Some((tls, server_name)))
            }
        };
        let target = tls.as_ref().map(|(tls, name)| pool::TlsTarget {
            tls,
            server_name: name,
        });
        let mut conn = match pool::checkout(key, target, svc.connect_timeout).await {
            Ok(c) => c,
            Err(e) if can_retry => {
                tracing::debug!(%addr, error = %e, tries, "connect failed, retrying");
                (tries, pending) = (tries + 1, req);
                continue;
            }
            Err(e) => return Err(e),
        };
        if !conn.reused && conn.sender.ready().await.is_err() {
            if can_retry {
                (tries, pending) = (tries + 1, req);
                continue;
            }
            return Err(ProxyError::BadGateway);
        }
        let replay = (conn.reused && bodyless && can_retry).then(|| copy_head(&req));
        let sent_at = Instant::now();
        let sending = conn.sender.try_send_request(req);
        match tokio::time::timeout(wait, sending).await {
            Err(_) => return Err(ProxyError::Timeout),
            Ok(Ok(response)) => {
                return Ok(Answer {
                    response,
                    conn,
                    sent_at,
                })
            }
            Ok(Err(mut e)) => {
                let retry = e.take_message().or(replay).filter(|_| can_retry);
                tracing::debug!(%addr, error = %e.error(), retrying = retry.is_some(), "upstream request failed");
                match retry {
                    Some(back) => (tries, pending) = (tries + 1, back),
                    None => return Err(ProxyError::BadGateway),
                }
            }
        }
    }
}

/// A body-less copy of a request head, to replay it.
fn copy_head(req: &Request<ProxyBody>) -> Request<ProxyBody> {
    let mut copy = Request::new(crate::body::full(bytes::Bytes::new()));
    *copy.method_mut() = req.method().clone();
    *copy.uri_mut() = req.uri().clone();
    *copy.version_mut() = req.version();
    *copy.headers_mut() = req.headers().clone();
    copy
}
