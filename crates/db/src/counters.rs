//! `policy: cluster` counters in PostgreSQL. rate-limiting's (`migrations/001_rate_limiting.sql`): one call
//! checks every window of a request and counts it in all or none, atomically across nodes.
//! response-ratelimiting's (`migrations/005_response_ratelimiting.sql`): a read of a request's windows, and
//! one statement that adds what a response spent to all of them.

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
    let (periods, dates, ttls) = columns(windows);
    let limits: Vec<i64> = windows.iter().map(|w| w.limit as i64).collect();
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

/// The windows' `period`, `period_date` and `ttl` columns.
fn columns<'a>(windows: &[Window<'a>]) -> (Vec<&'a str>, Vec<SystemTime>, Vec<SystemTime>) {
    let at = |secs: u64| UNIX_EPOCH + Duration::from_secs(secs);
    (
        windows.iter().map(|w| w.period).collect(),
        windows.iter().map(|w| at(w.start)).collect(),
        windows.iter().map(|w| at(w.start + w.ttl_secs)).collect(),
    )
}

/// response-ratelimiting: each window's count for (`identifier`, `service`, `route`), 0 for none yet.
pub async fn spent(
    client: &Client,
    identifier: &str,
    service: Uuid,
    route: Uuid,
    windows: &[Window<'_>],
) -> Result<Vec<u64>, tokio_postgres::Error> {
    let (periods, dates, _) = columns(windows);
    let rows = client
        .query(
            "SELECT coalesce(m.value, 0) FROM unnest($4::text[], $5::timestamptz[]) WITH ORDINALITY
               AS w(period, period_date, i)
             LEFT JOIN response_ratelimiting_metrics m ON m.identifier = $1 AND m.service_id = $2
               AND m.route_id = $3 AND m.period = w.period AND m.period_date = w.period_date
             ORDER BY w.i",
            &[&identifier, &service, &route, &periods, &dates],
        )
        .await?;
    Ok(rows
        .iter()
        .map(|r| r.get::<_, i64>(0).max(0) as u64)
        .collect())
}

/// response-ratelimiting: adds `by` to every window of (`identifier`, `service`, `route`) in one statement.
pub async fn spend(
    client: &Client,
    identifier: &str,
    service: Uuid,
    route: Uuid,
    windows: &[Window<'_>],
    by: u64,
) -> Result<(), tokio_postgres::Error> {
    let (periods, dates, ttls) = columns(windows);
    client
        .execute(
            "INSERT INTO response_ratelimiting_metrics AS m
               (identifier, period, period_date, service_id, route_id, value, ttl)
             SELECT $1, w.period, w.period_date, $2, $3, $6, w.ttl
               FROM unnest($4::text[], $5::timestamptz[], $7::timestamptz[]) AS w(period, period_date, ttl)
             ON CONFLICT (identifier, period, period_date, service_id, route_id)
             DO UPDATE SET value = coalesce(m.value, 0) + EXCLUDED.value",
            &[&identifier, &service, &route, &periods, &dates, &(by as i64), &ttls],
        )
        .await?;
    Ok(())
}

/// Deletes the counters of windows that have ended (both plugins' tables); returns how many.
pub async fn expire(client: &Client) -> Result<u64, tokio_postgres::Error> {
    let mut deleted = 0;
    for table in ["ratelimiting_metrics", "response_ratelimiting_metrics"] {
        deleted += client
            .execute(&format!("DELETE FROM {table} WHERE ttl < now()"), &[])
            .await?;
    }
    Ok(deleted)
}
