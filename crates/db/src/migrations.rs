//! Versioned schema migrations with Kong's commands and meanings.
//!
//! A migration has an `up` part (additive: new tables and columns, safe while older nodes still run) and
//! an optional `teardown` part (what only the new release may do, e.g. dropping an old column), as in Kong.
//! - `bootstrap`: on an empty database, runs every migration whole.
//! - `up`: runs the `up` of each new migration; those with a teardown become *pending*.
//! - `finish`: runs the pending teardowns.
//! - `list` / `status`: what has run, what is pending, what is new.
//! - `reset`: drops every table Sluice made.
//!
//! Every command holds one advisory lock for its whole run, so two nodes never migrate at once (the second
//! waits up to the lock timeout, then fails). The executed migrations are recorded in `sluice_migrations`.
//! A release adds a migration by appending to [`MIGRATIONS`]; names sort in the order they run.

use crate::DbError;
use sluice_model::declarative::kinds::TABLE;
use std::time::Duration;
use tokio_postgres::Client;

/// One schema change.
pub struct Migration {
    pub name: &'static str,
    pub up: &'static str,
    pub teardown: Option<&'static str>,
}

/// Every migration, in the order they run.
pub const MIGRATIONS: &[Migration] = &[
    Migration {
        name: "000_base",
        up: include_str!("../migrations/000_base.sql"),
        teardown: None,
    },
    Migration {
        name: "001_rate_limiting",
        up: include_str!("../migrations/001_rate_limiting.sql"),
        teardown: None,
    },
    Migration {
        name: "002_hmac_auth",
        up: include_str!("../migrations/002_hmac_auth.sql"),
        teardown: None,
    },
    Migration {
        name: "003_jwt",
        up: include_str!("../migrations/003_jwt.sql"),
        teardown: None,
    },
    Migration {
        name: "004_oauth2",
        up: include_str!("../migrations/004_oauth2.sql"),
        teardown: None,
    },
    Migration {
        name: "005_response_ratelimiting",
        up: include_str!("../migrations/005_response_ratelimiting.sql"),
        teardown: None,
    },
];

/// The advisory lock key migrations hold (any fixed number; "sluice" in ASCII).
const LOCK_KEY: i64 = 0x736c_7569_6365;

/// Where a database stands against this build's migrations.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum State {
    /// No `sluice_migrations` table: `sluice migrations bootstrap`.
    NotBootstrapped,
    /// Every migration ran whole.
    UpToDate,
    /// Some ran `up` only: `sluice migrations finish` (nodes may run meanwhile).
    Pending(Vec<String>),
    /// Some never ran: `sluice migrations up` (nodes refuse to start).
    New(Vec<String>),
}

impl State {
    /// Kong's exit codes of `migrations list`: 0 up to date, 3 not bootstrapped, 4 pending, 5 new.
    pub fn exit_code(&self) -> u8 {
        match self {
            State::UpToDate => 0,
            State::NotBootstrapped => 3,
            State::Pending(_) => 4,
            State::New(_) => 5,
        }
    }

    /// Why a node cannot start on this database, naming the command to run; None when it can.
    pub fn refusal(&self) -> Option<String> {
        match self {
            State::NotBootstrapped => {
                Some("the database is not bootstrapped: run 'sluice migrations bootstrap'".into())
            }
            State::New(names) => Some(format!(
                "new migrations available ({}): run 'sluice migrations up'",
                names.join(", ")
            )),
            State::UpToDate | State::Pending(_) => None,
        }
    }
}

/// (name, whether its teardown is still to run) of every recorded migration, or None when the database
/// was never bootstrapped.
async fn recorded(client: &Client) -> Result<Option<Vec<(String, bool)>>, DbError> {
    let exists = client
        .query_one("SELECT to_regclass('sluice_migrations') IS NOT NULL", &[])
        .await?
        .get::<_, bool>(0);
    if !exists {
        return Ok(None);
    }
    let rows = client
        .query(
            "SELECT name, pending FROM sluice_migrations ORDER BY name",
            &[],
        )
        .await?;
    Ok(Some(rows.iter().map(|r| (r.get(0), r.get(1))).collect()))
}

/// The database's [`State`].
pub async fn state(client: &Client) -> Result<State, DbError> {
    let Some(done) = recorded(client).await? else {
        return Ok(State::NotBootstrapped);
    };
    let new: Vec<String> = MIGRATIONS
        .iter()
        .filter(|m| !done.iter().any(|(n, _)| n == m.name))
        .map(|m| m.name.to_string())
        .collect();
    if !new.is_empty() {
        return Ok(State::New(new));
    }
    let pending: Vec<String> = done
        .into_iter()
        .filter(|(_, p)| *p)
        .map(|(n, _)| n)
        .collect();
    Ok(match pending.is_empty() {
        true => State::UpToDate,
        false => State::Pending(pending),
    })
}

/// Runs `f` holding the migrations lock (waiting at most `timeout` for it).
async fn locked<T>(
    client: &mut Client,
    timeout: Duration,
    f: impl AsyncFnOnce(&mut Client) -> Result<T, DbError>,
) -> Result<T, DbError> {
    client
        .batch_execute(&format!("SET lock_timeout = {}", timeout.as_millis()))
        .await?;
    client
        .execute("SELECT pg_advisory_lock($1)", &[&LOCK_KEY])
        .await
        .map_err(|e| DbError::Migrations(format!("could not take the migrations lock: {e}")))?;
    let result = f(client).await;
    let _ = client
        .execute("SELECT pg_advisory_unlock($1)", &[&LOCK_KEY])
        .await;
    result
}

/// `sluice migrations bootstrap`: every migration, whole, on a database that has none.
pub async fn bootstrap(client: &mut Client, timeout: Duration) -> Result<Vec<String>, DbError> {
    locked(client, timeout, async |client| {
        if recorded(client).await?.is_some() {
            return Err(DbError::Migrations(
                "the database is already bootstrapped: run 'sluice migrations up' for new migrations"
                    .into(),
            ));
        }
        let tx = client.transaction().await?;
        tx.batch_execute(
            "CREATE TABLE sluice_migrations (name text PRIMARY KEY, pending boolean NOT NULL, \
             executed_at timestamptz NOT NULL DEFAULT now())",
        )
        .await?;
        let mut ran = Vec::new();
        for m in MIGRATIONS {
            tx.batch_execute(m.up).await?;
            if let Some(teardown) = m.teardown {
                tx.batch_execute(teardown).await?;
            }
            tx.execute(
                "INSERT INTO sluice_migrations (name, pending) VALUES ($1, false)",
                &[&m.name],
            )
            .await?;
            ran.push(m.name.to_string());
        }
        tx.commit().await?;
        Ok(ran)
    })
    .await
}

/// `sluice migrations up`: the `up` part of every new migration.
pub async fn up(client: &mut Client, timeout: Duration) -> Result<Vec<String>, DbError> {
    locked(client, timeout, async |client| {
        let done = recorded(client).await?.ok_or_else(not_bootstrapped)?;
        let mut ran = Vec::new();
        for m in MIGRATIONS
            .iter()
            .filter(|m| !done.iter().any(|(n, _)| n == m.name))
        {
            let tx = client.transaction().await?;
            tx.batch_execute(m.up).await?;
            tx.execute(
                "INSERT INTO sluice_migrations (name, pending) VALUES ($1, $2)",
                &[&m.name, &m.teardown.is_some()],
            )
            .await?;
            tx.commit().await?;
            ran.push(m.name.to_string());
        }
        Ok(ran)
    })
    .await
}

/// `sluice migrations finish`: the pending teardowns.
pub async fn finish(client: &mut Client, timeout: Duration) -> Result<Vec<String>, DbError> {
    locked(client, timeout, async |client| {
        let done = recorded(client).await?.ok_or_else(not_bootstrapped)?;
        let mut ran = Vec::new();
        for (name, _) in done.iter().filter(|(_, pending)| *pending) {
            let m = MIGRATIONS.iter().find(|m| m.name == name);
            let tx = client.transaction().await?;
            if let Some(teardown) = m.and_then(|m| m.teardown) {
                tx.batch_execute(teardown).await?;
            }
            tx.execute(
                "UPDATE sluice_migrations SET pending = false WHERE name = $1",
                &[name],
            )
            .await?;
            tx.commit().await?;
            ran.push(name.clone());
        }
        Ok(ran)
    })
    .await
}

/// `sluice migrations reset --yes`: drops every table and function Sluice made.
pub async fn reset(client: &mut Client, timeout: Duration) -> Result<(), DbError> {
    locked(client, timeout, async |client| {
        let mut sql =
            String::from("DROP TABLE IF EXISTS sluice_migrations, sluice_changes, sluice_config");
        // The tables that are not entity kinds: plugins' runtime state.
        sql.push_str(", oauth2_authorization_codes, oauth2_tokens");
        sql.push_str(", ratelimiting_metrics, response_ratelimiting_metrics");
        for kind in TABLE {
            sql.push_str(", ");
            sql.push_str(kind.key());
        }
        sql.push_str(
            " CASCADE; DROP FUNCTION IF EXISTS sluice_log_change(); \
             DROP FUNCTION IF EXISTS sluice_rl_check_and_count(text, uuid, uuid, text[], timestamptz[], bigint[], timestamptz[]);",
        );
        client.batch_execute(&sql).await?;
        Ok(())
    })
    .await
}

/// One line per migration for `sluice migrations list`: `executed`, `pending` or `new`.
pub async fn list(client: &Client) -> Result<Vec<(String, &'static str)>, DbError> {
    let done = recorded(client).await?.unwrap_or_default();
    Ok(MIGRATIONS
        .iter()
        .map(|m| {
            let word = match done.iter().find(|(n, _)| n == m.name) {
                Some((_, true)) => "pending",
                Some((_, false)) => "executed",
                None => "new",
            };
            (m.name.to_string(), word)
        })
        .collect())
}

fn not_bootstrapped() -> DbError {
    DbError::Migrations(
        "the database is not bootstrapped: run 'sluice migrations bootstrap'".into(),
    )
}
