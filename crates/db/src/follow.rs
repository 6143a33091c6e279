//! The connection a node follows the database with: it `LISTEN`s on [`crate::CHANNEL`] and hands each
//! notified version to the node (and each target health set by hand on some node, on
//! [`crate::health::CHANNEL`]). The returned receiver closes when the connection drops, which is the
//! node's cue to reconnect and catch up (`read::since`), so no change is missed across a drop.

use crate::health::HealthNotice;
use crate::{DbError, PgSettings};
use tokio::sync::mpsc;
use tokio_postgres::{AsyncMessage, Client};

/// What a listening connection hands over: the client (for the catch-up reads), the notified versions,
/// and the health notices. Both receivers close when the connection drops.
pub struct Listening {
    pub client: Client,
    pub versions: mpsc::UnboundedReceiver<u64>,
    pub health: mpsc::UnboundedReceiver<HealthNotice>,
}

/// Connects and listens on both channels.
pub async fn listen(settings: &PgSettings) -> Result<Listening, DbError> {
    let (versions, versions_rx) = mpsc::unbounded_channel();
    let (health, health_rx) = mpsc::unbounded_channel();
    let client = crate::settings::connect_one(settings, move |message| {
        if let AsyncMessage::Notification(n) = message {
            if n.channel() == crate::health::CHANNEL {
                if let Some(notice) = HealthNotice::parse(n.payload()) {
                    let _ = health.send(notice);
                }
            } else if let Ok(version) = n.payload().parse::<u64>() {
                let _ = versions.send(version);
            }
        }
    })
    .await?;
    client
        .batch_execute(&format!(
            "LISTEN {}; LISTEN {}",
            crate::CHANNEL,
            crate::health::CHANNEL
        ))
        .await?;
    Ok(Listening {
        client,
        versions: versions_rx,
        health: health_rx,
    })
}
