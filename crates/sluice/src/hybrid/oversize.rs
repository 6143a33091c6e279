//! Frames over `cluster_max_payload`, said clearly on both sides of the link.
//!
//! - The CP does not send a frame over its own limit (as Kong's CP, whose WebSocket library refuses to send
//!   a payload over `max_payload_len`), and a DP refuses one over its limit, compressed (the WebSocket
//!   layer's limit) or inflated.
//! - The side that refuses logs an error naming the limit and the size, and ends the link with a close
//!   frame of code 1009 ("message too big") whose reason names the limit; the other side logs that reason
//!   ([`closed`]). Each new link meets the same refusal until the limit or the config changes.

use std::time::Duration;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::WebSocketStream;

/// A frame over `cluster_max_payload`: an error in the log rather than a failed link.
#[derive(Debug)]
pub struct Oversized(String);

impl std::fmt::Display for Oversized {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Oversized {}

/// Refuses a frame of `what` (`"configuration"`, `"basic_info"`) over the `limit` of `side` (`"control
/// plane"` or `"data plane"`): closes the link with 1009 and the reason, and returns the error to log,
/// with `detail` (the sizes).
pub async fn refuse<S>(
    ws: &mut WebSocketStream<S>,
    side: &str,
    limit: usize,
    what: &str,
    detail: &str,
) -> anyhow::Error
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let reason = format!("{what} over the {side}'s cluster_max_payload of {limit} bytes");
    let close = CloseFrame {
        code: CloseCode::Size,
        reason: reason.clone().into(),
    };
    let _ = tokio::time::timeout(Duration::from_secs(1), ws.close(Some(close))).await;
    Oversized(format!(
        "{reason} ({detail}); raise cluster_max_payload on the control plane and its data planes, \
         or make the {what} smaller"
    ))
    .into()
}

/// The end of a link that the `peer` closed: fine when it closed normally, went away (shutting down) or
/// said nothing, else an error with its code and reason ([`Oversized`] for 1009).
pub fn closed(peer: &str, frame: Option<CloseFrame>) -> anyhow::Result<()> {
    let fine = |f: &CloseFrame| matches!(f.code, CloseCode::Normal | CloseCode::Away);
    let Some(frame) = frame.filter(|f| !fine(f)) else {
        return Ok(());
    };
    let code = u16::from(frame.code);
    let message = format!("the {peer} closed the link ({code}): {}", frame.reason);
    match frame.code {
        CloseCode::Size => Err(Oversized(message).into()),
        _ => Err(anyhow::anyhow!(message)),
    }
}

#[cfg(test)]
mod tests;
