//! The connection a node follows the database with: it `LISTEN`s on [`crate::CHANNEL`] and hands each
//! notified version to the node. The returned receiver closes when the connection drops, which is the
//! node's cue to reconnect and catch up (`read::since`), so no change is missed across a drop.

use crate::{DbError, PgSettings};
use futures_util::StreamExt;
use tokio::sync::mpsc;
use tokio_postgres::{AsyncMessage, Client, NoTls};

/// Connects, listens, and returns the client (for the catch-up reads) and the notified versions.
pub async fn listen(
    settings: &PgSettings,
) -> Result<(Client, mpsc::UnboundedReceiver<u64>), DbError> {
    let (client, mut connection) = settings
        .client_config()
        .connect(NoTls)
        .await
        .map_err(|e| DbError::Unavailable(e.to_string()))?;
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        let mut messages = futures_util::stream::poll_fn(move |cx| connection.poll_message(cx));
        while let Some(message) = messages.next().await {
            match message {
                Ok(AsyncMessage::Notification(n)) => {
                    if let Ok(version) = n.payload().parse::<u64>() {
                        if tx.send(version).is_err() {
                            break;
                        }
                    }
                }
                Ok(_) => {}
                Err(e) => {
                    tracing::warn!(error = %e, "database connection lost");
                    break;
                }
            }
        }
    });
    client
        .batch_execute(&format!("LISTEN {}", crate::CHANNEL))
        .await?;
    Ok((client, rx))
}
