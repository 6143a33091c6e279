//! The connection a node follows the database with: it `LISTEN`s on [`crate::CHANNEL`] and hands each
//! notified version to the node. The returned receiver closes when the connection drops, which is the
//! node's cue to reconnect and catch up (`read::since`), so no change is missed across a drop.

use crate::{DbError, PgSettings};
use tokio::sync::mpsc;
use tokio_postgres::{AsyncMessage, Client};

/// Connects, listens, and returns the client (for the catch-up reads) and the notified versions.
pub async fn listen(
    settings: &PgSettings,
) -> Result<(Client, mpsc::UnboundedReceiver<u64>), DbError> {
    let (tx, rx) = mpsc::unbounded_channel();
    let client = crate::settings::connect_one(settings, move |message| {
        if let AsyncMessage::Notification(n) = message {
            if let Ok(version) = n.payload().parse::<u64>() {
                let _ = tx.send(version);
            }
        }
    })
    .await?;
    client
        .batch_execute(&format!("LISTEN {}", crate::CHANNEL))
        .await?;
    Ok((client, rx))
}
