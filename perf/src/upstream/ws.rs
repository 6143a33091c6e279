//! The upstream's WebSocket echo (the ws-echo case): an HTTP/1.1 request asking to upgrade to
//! `websocket` is answered 101, and every text or binary message on the tunnel is sent back as it came.

use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{HeaderValue, CONNECTION, SEC_WEBSOCKET_ACCEPT, SEC_WEBSOCKET_KEY, UPGRADE};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::Role;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

/// Whether `req` asks to upgrade to a WebSocket.
pub fn is_upgrade<B>(req: &Request<B>) -> bool {
    req.headers()
        .get(UPGRADE)
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"websocket"))
}

/// Answers a WebSocket handshake request: 101 with the accept key, and the echo started on the
/// upgraded connection; 400 without a `Sec-WebSocket-Key`.
pub fn accept(req: Request<Incoming>) -> Response<Full<Bytes>> {
    let Some(key) = req.headers().get(SEC_WEBSOCKET_KEY) else {
        let mut bad = Response::new(Full::new(Bytes::from_static(b"no Sec-WebSocket-Key")));
        *bad.status_mut() = StatusCode::BAD_REQUEST;
        return bad;
    };
    let accept = derive_accept_key(key.as_bytes());
    tokio::spawn(async move {
        if let Ok(upgraded) = hyper::upgrade::on(req).await {
            let ws =
                WebSocketStream::from_raw_socket(TokioIo::new(upgraded), Role::Server, None).await;
            echo(ws).await;
        }
    });
    let mut resp = Response::new(Full::new(Bytes::new()));
    *resp.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let headers = resp.headers_mut();
    headers.insert(UPGRADE, HeaderValue::from_static("websocket"));
    headers.insert(CONNECTION, HeaderValue::from_static("Upgrade"));
    if let Ok(v) = HeaderValue::from_str(&accept) {
        headers.insert(SEC_WEBSOCKET_ACCEPT, v);
    }
    resp
}

/// Sends every data message back until the tunnel ends (pings and closes are answered by tungstenite).
async fn echo<S>(mut ws: WebSocketStream<S>)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    while let Some(Ok(msg)) = ws.next().await {
        if matches!(msg, Message::Text(_) | Message::Binary(_)) && ws.send(msg).await.is_err() {
            return;
        }
    }
}
