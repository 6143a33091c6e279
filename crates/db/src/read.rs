//! What a node reads to follow the database: the whole config at one version (at start and after a gap),
//! and the entities changed since a version (after each notification). Both read in one REPEATABLE READ
//! transaction, so the version and the rows agree.

use crate::DbError;
use sluice_model::declarative::kinds::{Kind, TABLE};
use std::collections::{BTreeMap, HashMap};
use tokio_postgres::{Client, IsolationLevel, Transaction};
use uuid::Uuid;

/// One stored entity.
#[derive(Debug, Clone)]
pub struct Row {
    pub id: Uuid,
    pub created_at: i64,
    /// The entity's JSON, as the Admin API returns it.
    pub body: Vec<u8>,
}

/// Every entity at `version`, per kind in table order, each kind in creation order.
pub struct Everything {
    pub version: u64,
    pub kinds: Vec<(Kind, Vec<Row>)>,
}

/// One changed entity: its row now, or None when it was deleted.
pub struct Change {
    pub kind: Kind,
    pub id: Uuid,
    pub row: Option<Row>,
}

/// The changes after a version.
pub enum Since {
    /// The changes up to `version`.
    Changes { version: u64, changes: Vec<Change> },
    /// The change log no longer reaches back that far: read everything.
    TooOld,
}

fn row(r: &tokio_postgres::Row) -> Row {
    Row {
        id: r.get(0),
        created_at: r.get(1),
        body: r.get::<_, String>(2).into_bytes(),
    }
}

/// A read-only transaction that sees one version of the database, and that version.
async fn at_one_version(client: &mut Client) -> Result<(Transaction<'_>, i64), DbError> {
    let tx = client
        .build_transaction()
        .isolation_level(IsolationLevel::RepeatableRead)
        .read_only(true)
        .start()
        .await?;
    let version: i64 = tx
        .query_one("SELECT version FROM sluice_config", &[])
        .await?
        .get(0);
    Ok((tx, version))
}

/// The whole config.
pub async fn everything(client: &mut Client) -> Result<Everything, DbError> {
    let (tx, version) = at_one_version(client).await?;
    let mut kinds = Vec::with_capacity(TABLE.len());
    for kind in TABLE {
        let sql = format!(
            "SELECT id, created_at, entity::text FROM {} ORDER BY created_at, id",
            kind.key()
        );
        let rows = tx.query(&sql, &[]).await?;
        kinds.push((*kind, rows.iter().map(row).collect()));
    }
    tx.commit().await?;
    Ok(Everything {
        version: version as u64,
        kinds,
    })
}

/// The entities changed after `after`, each once with its current row.
pub async fn since(client: &mut Client, after: u64) -> Result<Since, DbError> {
    let (tx, version) = at_one_version(client).await?;
    let after = after as i64;
    if version < after {
        return Ok(Since::TooOld); // the database was reset or replaced
    }
    if version == after {
        // Nothing new (a poll, or a notification already covered by an earlier read).
        tx.commit().await?;
        return Ok(Since::Changes {
            version: version as u64,
            changes: Vec::new(),
        });
    }
    let oldest: Option<i64> = tx
        .query_one("SELECT min(version) FROM sluice_changes", &[])
        .await?
        .get(0);
    if oldest.is_none_or(|o| o > after + 1) {
        return Ok(Since::TooOld);
    }
    let changed = tx
        .query(
            "SELECT DISTINCT kind, id FROM sluice_changes WHERE version > $1 AND version <= $2",
            &[&after, &version],
        )
        .await?;
    let mut by_kind: BTreeMap<Kind, Vec<Uuid>> = BTreeMap::new();
    for r in &changed {
        if let Some(kind) = Kind::from_key(r.get::<_, &str>(0)) {
            by_kind.entry(kind).or_default().push(r.get(1));
        }
    }
    let mut changes = Vec::new();
    for (kind, ids) in by_kind {
        let sql = format!(
            "SELECT id, created_at, entity::text FROM {} WHERE id = ANY($1)",
            kind.key()
        );
        let mut rows: HashMap<Uuid, Row> = tx
            .query(&sql, &[&ids])
            .await?
            .iter()
            .map(|r| (r.get(0), row(r)))
            .collect();
        for id in ids {
            let row = rows.remove(&id);
            changes.push(Change { kind, id, row });
        }
    }
    tx.commit().await?;
    Ok(Since::Changes {
        version: version as u64,
        changes,
    })
}
