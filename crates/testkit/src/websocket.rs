//! A WebSocket echo upstream (tokio-tungstenite) for the WebSocket proxying tests: it echoes every text
//! and binary message, and records each handshake request's path and headers.
//!
//! The request path steers it: `/refuse...` refuses the handshake with 403; `/greet...` sends the text
//! `hello` right after its 101, before reading anything (so those bytes may arrive with the head). A text
//! message `close` makes it close the connection with a close frame (1000, "bye").

use crate::echo::Background;
use futures_util::{SinkExt, StreamExt};
use http::HeaderMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::Message;

/// One handshake request the upstream received.
#[derive(Debug, Clone)]
pub struct WsHandshake {
    pub path: String,
    pub headers: HeaderMap,
}

/// The WebSocket echo upstream; stops when dropped.
pub struct WsEchoUpstream {
    server: Background,
    handshakes: Arc<Mutex<Vec<WsHandshake>>>,
}

impl WsEchoUpstream {
    pub fn start() -> WsEchoUpstream {
        let handshakes = Arc::new(Mutex::new(Vec::new()));
        let seen = handshakes.clone();
        let server = Background::start(move |listener| async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                tokio::task::spawn_local(serve(stream, seen.clone()));
            }
        });
        WsEchoUpstream { server, handshakes }
    }

    pub fn addr(&self) -> SocketAddr {
        self.server.addr
    }

    pub fn port(&self) -> u16 {
        self.server.addr.port()
    }

    /// Every handshake request received so far, refused ones included.
    pub fn handshakes(&self) -> Vec<WsHandshake> {
        self.handshakes.lock().expect("handshakes").clone()
    }
}

// The handshake callback's `Result` is tungstenite's type, large error and all.
#[allow(clippy::result_large_err)]
async fn serve(stream: tokio::net::TcpStream, seen: Arc<Mutex<Vec<WsHandshake>>>) {
    let mut path = String::new();
    let callback = |req: &Request, resp: Response| -> Result<Response, ErrorResponse> {
        path = req.uri().path().to_string();
        seen.lock().expect("handshakes").push(WsHandshake {
            path: path.clone(),
            headers: req.headers().clone(),
        });
        if path.starts_with("/refuse") {
            let mut refused = ErrorResponse::new(Some("refused".into()));
            *refused.status_mut() = http::StatusCode::FORBIDDEN;
            return Err(refused);
        }
        Ok(resp)
    };
    let Ok(mut ws) = tokio_tungstenite::accept_hdr_async(stream, callback).await else {
        return;
    };
    if path.starts_with("/greet") && ws.send(Message::text("hello")).await.is_err() {
        return;
    }
    while let Some(Ok(msg)) = ws.next().await {
        let reply = match msg {
            Message::Text(t) if t.as_str() == "close" => {
                let frame = CloseFrame {
                    code: CloseCode::Normal,
                    reason: "bye".into(),
                };
                let _ = ws.close(Some(frame)).await;
                // Read on until the client's close frame answers ours (tungstenite then ends the stream).
                continue;
            }
            Message::Text(_) | Message::Binary(_) => msg,
            // Pings are answered by tungstenite itself; a close is answered likewise.
            _ => continue,
        };
        if ws.send(reply).await.is_err() {
            return;
        }
    }
}
