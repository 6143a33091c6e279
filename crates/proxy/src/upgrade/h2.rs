//! WebSocket from HTTP/2 clients (RFC 8441): an extended CONNECT is bridged to the HTTP/1.1 upgrade the
//! upstream speaks, and the upstream's 101 is turned into the 200 that accepts an extended CONNECT.
//! Used by [`super`] around balance-and-send and `header_filter`.

use base64::Engine;
use http::header::{HeaderValue, CONNECTION, SEC_WEBSOCKET_ACCEPT, SEC_WEBSOCKET_KEY, UPGRADE};
use http::{request, Method, StatusCode};

/// An extended CONNECT as the HTTP/1.1 handshake it stands for (RFC 8441 §5): a GET with a fresh
/// `Sec-WebSocket-Key` (the client's `Sec-WebSocket-Version`, `-Protocol` and `-Extensions` go as sent).
pub(super) fn as_http1_handshake(request: &mut request::Parts) {
    request.method = Method::GET;
    let key = base64::engine::general_purpose::STANDARD.encode(uuid::Uuid::new_v4().as_bytes());
    if let Ok(key) = HeaderValue::from_str(&key) {
        request.headers.insert(SEC_WEBSOCKET_KEY, key);
    }
}

/// The upstream's 101 as the answer to an extended CONNECT: 200, without the HTTP/1.1 handshake's
/// connection-level fields (h2 forbids `Connection` and `Upgrade`).
pub(super) fn as_h2_answer(head: &mut http::response::Parts) {
    head.status = StatusCode::OK;
    for name in [CONNECTION, UPGRADE, SEC_WEBSOCKET_ACCEPT] {
        head.headers.remove(name);
    }
}
