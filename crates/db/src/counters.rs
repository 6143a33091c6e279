//! rate-limiting's `policy: cluster` counters in PostgreSQL (`migrations/001_rate_limiting.sql`): one call
//! checks every window of a request and counts it in all or none, atomically across nodes.

use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio_postgres::Client;
use uuid::Uuid;

/// One window: Kong's period name, its start (Unix seconds), the limit, and how long its row is kept.
pub struct Window<'a> {
    pub period: &'a str,
    pub start: u64,
    pub limit: u64,
    pub ttl_secs: u64,
}

/// Checks and counts one request of (`identifier`, `service`, `route`). Returns whether it is let through
/// and each window's count (after it when let through; unchanged when refused).
pub async fn check_and_count(
    client: &Client,
    identifier: &str,
    service: Uuid,
    route: Uuid,
    windows: &[Window<'_>],
) -> Result<(bool, Vec<u64>), tokio_postgres::Error> {
    let at = |secs: u64| UNIX_EPOCH + Duration::from_secs(secs);
    let periods: Vec<&str> = windows.iter().map(|w| w.period).collect();
    let dates: Vec<SystemTime> = windows.iter().map(|w| at(w.start)).collect();
    let limits: Vec<i64> = windows.iter().map(|w| w.limit as i64).collect();
    let ttls: Vec<SystemTime> = windows.iter().map(|w| at(w.start + w.ttl_secs)).collect();
    let row = client
        .query_one(
            "SELECT sluice_rl_check_and_count($1, $2, $3, $4, $5, $6, $7)",
            &[
                &identifier,
                &service,
                &route,
                &periods,
                &dates,
                &limits,
                &ttls,
            ],
        )
        .await?;
    let reply: Vec<i64> = row.get(0);
    let allowed = reply.first() == Some(&1);
    Ok((
        allowed,
        reply.iter().skip(1).map(|c| (*c).max(0) as u64).collect(),
    ))
}

/// Deletes the counters of windows that have ended; returns how many.
pub async fn expire(client: &Client) -> Result<u64, tokio_postgres::Error> {
    client
        .execute("DELETE FROM ratelimiting_metrics WHERE ttl < now()", &[])
        .await
}
