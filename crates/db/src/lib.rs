//! DB mode on PostgreSQL: the schema and its migrations, entity writes with Kong's rules enforced in the
//! write's own transaction, and the reads a node follows the database with.
//!
//! - [`settings`]: Kong's `pg_*` settings and the connection pool.
//! - [`migrations`]: `sluice migrations bootstrap | up | finish | list | status | reset` (versioned SQL
//!   files under `migrations/`, one advisory lock so two nodes never migrate at once).
//! - [`tables`]: what PostgreSQL keeps per entity kind, derived from the model's kind table.
//! - [`write`]: one Admin API write (create, upsert, update, delete) in one transaction that also bumps the
//!   config version and notifies every node; constraint violations become Kong's DAO errors ([`errors`]).
//! - [`read`]: the whole config at a version, and the entities changed since a version.
//! - [`follow`]: a connection that `LISTEN`s for new versions and reconnects when it drops.
//! - [`health`]: target health set by hand, broadcast to every node.
//!
//! The schema's reasons are in `migrations/000_base.sql` and `docs/db-mode.md`.

pub mod counters;
pub mod errors;
pub mod follow;
pub mod health;
pub mod import;
pub mod migrations;
pub mod oauth2;
pub mod read;
pub mod settings;
pub mod tables;
pub mod write;

pub use settings::{connect, PgSettings};

/// The notification channel every write notifies with its new version.
pub const CHANNEL: &str = "sluice_config";

/// A failure to reach or use the database (not a refused write: see [`sluice_model::writes::WriteError`]).
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    #[error("cannot reach the database: {0}")]
    Unavailable(String),
    #[error("{0}")]
    Migrations(String),
    #[error("database error: {0}")]
    Query(#[from] tokio_postgres::Error),
}

impl From<deadpool_postgres::PoolError> for DbError {
    fn from(e: deadpool_postgres::PoolError) -> DbError {
        DbError::Unavailable(e.to_string())
    }
}

/// Versions of the change log kept: a node that falls further behind (a long outage) reads everything
/// instead of the changes.
pub const KEPT_VERSIONS: i64 = 10_000;

/// Starts a config change inside `tx`: bumps the version first, so the row lock orders writers and versions
/// commit in order; the triggers log each changed row under it. Returns the new version.
pub async fn begin_change(
    tx: &tokio_postgres::Transaction<'_>,
) -> Result<i64, tokio_postgres::Error> {
    let row = tx
        .query_one(
            "UPDATE sluice_config SET version = version + 1 RETURNING version",
            &[],
        )
        .await?;
    Ok(row.get(0))
}

/// Ends a config change inside `tx` before its commit: every 100th version drops change-log entries
/// older than [`KEPT_VERSIONS`] (so the log stays bounded), and every node is notified of `version`
/// (delivered at commit).
pub async fn end_change(
    tx: &tokio_postgres::Transaction<'_>,
    version: i64,
) -> Result<(), tokio_postgres::Error> {
    if version % 100 == 0 {
        tx.execute(
            "DELETE FROM sluice_changes WHERE version <= $1",
            &[&(version - KEPT_VERSIONS)],
        )
        .await?;
    }
    tx.execute(
        "SELECT pg_notify($1, $2)",
        &[&CHANNEL, &version.to_string()],
    )
    .await?;
    Ok(())
}
