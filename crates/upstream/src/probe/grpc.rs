//! The gRPC probe (`type: grpc` over h2c with prior knowledge, `grpcs` over TLS with ALPN `h2`): one
//! unary call of the standard health service, `grpc.health.v1.Health/Check` with an empty
//! `HealthCheckRequest` (service "": the server as a whole), on a new HTTP/2 connection made by
//! [`crate::h2::connect`] and closed after the call. The target is healthy when the call ends with
//! `grpc-status: 0` and the answer says `SERVING`; any other answer counts as an HTTP failure, a
//! connection that cannot be made or breaks as a TCP failure (the caller's deadline as a timeout).

use crate::balancer::Peer;
use crate::body;
use crate::forward::strip_hop_by_hop;
use crate::h2;
use crate::health::active::Spec;
use crate::health::Failure;
use crate::pool::{PoolKey, TlsTarget};
use bytes::Bytes;
use http::header::{CONTENT_TYPE, TE};
use http::{HeaderMap, HeaderValue, Method, Request, StatusCode, Uri, Version};
use http_body_util::{BodyExt, LengthLimitError, Limited};

/// The health service's one unary method.
const PATH: &str = "/grpc.health.v1.Health/Check";
/// An empty `HealthCheckRequest` in its gRPC frame: not compressed, 0 bytes long.
const REQUEST: &[u8] = &[0, 0, 0, 0, 0];
/// The most of an answer read (a `SERVING` answer is 7 bytes); a longer one counts as a bad answer.
const MAX_ANSWER: usize = 4096;
/// `HealthCheckResponse.ServingStatus.SERVING`.
const SERVING: u64 = 1;

/// Calls the health service of `key`'s target: `Ok(0)` when it is serving.
pub(super) async fn check(
    spec: &Spec,
    peer: &Peer,
    key: PoolKey,
    tls: Option<TlsTarget<'_>>,
) -> Result<u16, Failure> {
    let scheme = if tls.is_some() { "https" } else { "http" };
    let uri = Uri::builder()
        .scheme(scheme)
        .authority(peer.host_header.as_bytes())
        .path_and_query(PATH)
        .build()
        .map_err(|_| Failure::Http)?;
    let mut req = Request::new(body::full(Bytes::from_static(REQUEST)));
    *req.method_mut() = Method::POST;
    *req.uri_mut() = uri;
    *req.version_mut() = Version::HTTP_2;
    *req.headers_mut() = headers(spec);
    let mut sender = h2::connect(key, tls).await.map_err(|_| Failure::Tcp)?;
    sender.ready().await.map_err(|_| Failure::Tcp)?;
    let response = sender.send_request(req).await.map_err(|e| {
        tracing::debug!(addr = %key.addr, error = %e, "gRPC health probe failed");
        Failure::Tcp
    })?;
    if response.status() != StatusCode::OK {
        return Err(Failure::Http);
    }
    let (head, answer) = response.into_parts();
    let answer = Limited::new(answer, MAX_ANSWER)
        .collect()
        .await
        .map_err(|e| match e.is::<LengthLimitError>() {
            true => Failure::Http,
            false => Failure::Tcp,
        })?;
    // The status is in the trailers, or in the head of a trailers-only answer.
    let trailers = answer.trailers().cloned().unwrap_or_default();
    let status = trailers
        .get("grpc-status")
        .or_else(|| head.headers.get("grpc-status"));
    let serving = serving(&answer.to_bytes());
    if status.is_some_and(|s| s == "0") && serving {
        return Ok(0);
    }
    tracing::debug!(addr = %key.addr, ?status, serving, "gRPC health probe: not serving");
    Err(Failure::Http)
}

/// The check's `headers`, then the call's own (`content-type`, `te: trailers`); fields HTTP/2 does not
/// carry are left out.
fn headers(spec: &Spec) -> HeaderMap {
    let mut headers = HeaderMap::with_capacity(spec.headers.len() + 2);
    for (name, value) in &spec.headers {
        headers.append(name, value.clone());
    }
    strip_hop_by_hop(&mut headers);
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/grpc"));
    headers.insert(TE, HeaderValue::from_static("trailers"));
    headers
}

/// Whether the body is one uncompressed gRPC message, a `HealthCheckResponse` whose `status` is
/// `SERVING`.
fn serving(body: &[u8]) -> bool {
    let Some((&[0, a, b, c, d], message)) = body.split_first_chunk::<5>() else {
        return false;
    };
    let len = u32::from_be_bytes([a, b, c, d]);
    usize::try_from(len).is_ok_and(|len| len == message.len()) && status(message) == Some(SERVING)
}

/// The `status` of a `HealthCheckResponse` (field 1, an enum; 0, `UNKNOWN`, when absent; the last one
/// when repeated, as protobuf reads it); None when the bytes are not a protobuf message.
fn status(mut message: &[u8]) -> Option<u64> {
    let mut status = 0;
    while !message.is_empty() {
        let key = varint(&mut message)?;
        match key & 7 {
            0 => {
                let value = varint(&mut message)?;
                if key >> 3 == 1 {
                    status = value;
                }
            }
            1 => message = message.get(8..)?,
            2 => {
                let len = usize::try_from(varint(&mut message)?).ok()?;
                message = message.get(len..)?;
            }
            5 => message = message.get(4..)?,
            _ => return None,
        }
    }
    Some(status)
}

/// A protobuf varint taken from the front of `bytes` (at most 10 bytes).
fn varint(bytes: &mut &[u8]) -> Option<u64> {
    let mut value = 0;
    for i in 0..10 {
        let (&b, rest) = bytes.split_first()?;
        *bytes = rest;
        value |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Some(value);
        }
    }
    None
}

#[cfg(test)]
mod tests;
