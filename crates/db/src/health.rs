//! Target health set by hand through the Admin API (`PUT /upstreams/{u}/targets/{t}/healthy|unhealthy`),
//! broadcast to every node on the database, as Kong does through its cluster events. It is runtime state,
//! not config: nothing is stored and no config version is bumped; a `NOTIFY` on [`CHANNEL`] carries it to
//! the nodes listening at that moment (a node that starts later begins with every target healthy, as a
//! Kong node does).

use crate::DbError;
use deadpool_postgres::Pool;
use serde_json::{json, Value};
use uuid::Uuid;

/// The channel health notices travel on (the config's is [`crate::CHANNEL`]).
pub const CHANNEL: &str = "sluice_health";

/// One target's health, set by hand on node `node`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HealthNotice {
    pub upstream: String,
    pub target: String,
    pub healthy: bool,
    /// The node that received the Admin request (it has applied the notice already).
    pub node: Uuid,
}

impl HealthNotice {
    fn payload(&self) -> String {
        json!({
            "upstream": self.upstream,
            "target": self.target,
            "healthy": self.healthy,
            "node": self.node,
        })
        .to_string()
    }

    /// Reads a notification's payload; None for one this build did not send.
    pub fn parse(payload: &str) -> Option<HealthNotice> {
        let v: Value = serde_json::from_str(payload).ok()?;
        Some(HealthNotice {
            upstream: v["upstream"].as_str()?.to_string(),
            target: v["target"].as_str()?.to_string(),
            healthy: v["healthy"].as_bool()?,
            node: v["node"].as_str()?.parse().ok()?,
        })
    }
}

/// Sends `notice` to every node listening on the database.
pub async fn broadcast(pool: &Pool, notice: &HealthNotice) -> Result<(), DbError> {
    let client = pool.get().await?;
    client
        .execute("SELECT pg_notify($1, $2)", &[&CHANNEL, &notice.payload()])
        .await?;
    Ok(())
}
