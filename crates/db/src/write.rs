//! One Admin API write, in one transaction, with Kong's semantics:
//! - `POST` inserts (201); `PUT` inserts or replaces whole, by id or endpoint key (200); `PATCH` merges into
//!   the stored entity (200, or code 6 when missing); `DELETE` removes (204, also when missing).
//! - A nested path (`/services/{s}/routes`) finds its parent first (404 when missing) and sets the child's
//!   foreign key; an item under the wrong parent is 404.
//! - The entity is validated on its own (`validate_one`); PostgreSQL enforces uniqueness and references in
//!   the same transaction, and its refusals become Kong's codes 3, 4 and 5 (`errors`).
//!
//! Every transaction that writes bumps `sluice_config.version` first (the row lock orders writers, so
//! versions commit in order), and notifies [`crate::CHANNEL`] with it; the triggers of `000_base.sql` log
//! each changed row, cascaded deletes included, under that version.

mod lookup;
mod snis;

use crate::errors::to_write_error;
use crate::tables;
use deadpool_postgres::{Pool, Transaction};
use lookup::{find, resolve_refs};
use serde_json::{Map, Value};
use sluice_model::declarative::kinds::Kind;
use sluice_model::declarative::validate_one;
use sluice_model::writes::{EntityWrite, WriteError, WriteOp, Written};
use sluice_model::PluginRegistry;
use snis::sync_snis;
use tokio_postgres::types::ToSql;
use uuid::Uuid;

/// A stored entity.
pub(crate) struct Stored {
    pub(crate) id: Uuid,
    pub(crate) created_at: i64,
    pub(crate) entity: Value,
}

/// Runs one write. Returns what to answer and the config version it committed (None when nothing changed:
/// a `DELETE` of a missing entity).
pub async fn write(
    pool: &Pool,
    registry: &dyn PluginRegistry,
    w: EntityWrite,
) -> Result<(Written, Option<u64>), WriteError> {
    let mut client = pool
        .get()
        .await
        .map_err(|e| WriteError::Unavailable(format!("cannot reach the database: {e}")))?;
    let tx = client.transaction().await.map_err(unavailable)?;
    let version = crate::begin_change(&tx).await.map_err(internal)?;
    let parent = match &w.parent {
        Some(p) => Some(
            find(&tx, p.kind, &p.key, None)
                .await?
                .ok_or(WriteError::NotFound)?
                .id,
        ),
        None => None,
    };
    let scope = w.parent.as_ref().map(|p| p.field).zip(parent);
    let existing = match &w.key {
        Some(key) => find(&tx, w.kind, key, scope).await?,
        None => None,
    };
    let written = match w.op {
        WriteOp::Delete => {
            let Some(row) = existing else {
                return Ok((deleted(), None));
            };
            let sql = format!("DELETE FROM {} WHERE id = $1", w.kind.key());
            tx.execute(&statement(&tx, &sql).await?, &[&row.id])
                .await
                .map_err(|e| to_write_error(e, w.kind, None))?;
            deleted()
        }
        op => {
            let p = prepare(op, &w, existing)?;
            let status = p.status;
            let snis = match (w.kind, w.body.get("snis")) {
                (Kind::Certificate, Some(Value::Array(names))) => Some(names.clone()),
                _ => None,
            };
            let mut entity = store(&tx, registry, &w, p, scope).await?;
            if let Some(names) = snis {
                entity["snis"] = sync_snis(&tx, registry, &entity, names).await?;
            }
            Written {
                status,
                entity: Some(entity),
            }
        }
    };
    crate::end_change(&tx, version).await.map_err(internal)?;
    tx.commit().await.map_err(unavailable)?;
    Ok((written, Some(version as u64)))
}

fn deleted() -> Written {
    Written {
        status: 204,
        entity: None,
    }
}

/// What a create, upsert or update writes, before validation.
struct Prepared {
    status: u16,
    id: Uuid,
    created_at: i64,
    body: Map<String, Value>,
    /// A basic-auth password in the body is plain text (to hash).
    hash: bool,
}

/// The status, id, `created_at` and body to validate for a create, upsert or update.
fn prepare(op: WriteOp, w: &EntityWrite, existing: Option<Stored>) -> Result<Prepared, WriteError> {
    let now = now();
    let mut body = w.body.clone();
    let given_id = match body.get("id") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => {
            Some(Uuid::parse_str(s).map_err(|_| WriteError::field("id", "expected a valid UUID"))?)
        }
        Some(_) => return Err(WriteError::field("id", "expected a string")),
    };
    let (status, id, created_at) = match op {
        WriteOp::Create => (201, given_id.unwrap_or_else(Uuid::new_v4), now),
        WriteOp::Upsert => {
            let key = w.key.as_deref().unwrap_or_default();
            let by_key = Uuid::parse_str(key).ok();
            if by_key.is_none() {
                if let Some(field) = w.kind.endpoint_key() {
                    body.insert(field.into(), Value::String(key.into()));
                }
            }
            let id = by_key
                .or(existing.as_ref().map(|e| e.id))
                .or(given_id)
                .unwrap_or_else(Uuid::new_v4);
            (200, id, existing.as_ref().map_or(now, |e| e.created_at))
        }
        WriteOp::Update => {
            let stored = existing.ok_or(WriteError::NotFound)?;
            let secret = ["hash_secret", "client_secret"].map(|f| w.body.contains_key(f));
            if w.kind == Kind::OAuth2 && secret[0] != secret[1] {
                // Kong's rule: an oauth2 secret is hashed (or not) as it is written, so both come together.
                return Err(WriteError::Schema(vec![sluice_model::FieldError::entity(
                    "all or none of these fields must be set: 'hash_secret', 'client_secret'",
                )]));
            }
            let mut merged = match stored.entity {
                Value::Object(m) => m,
                _ => Map::new(),
            };
            merge(&mut merged, std::mem::take(&mut body));
            body = merged;
            (200, stored.id, stored.created_at)
        }
        WriteOp::Delete => unreachable!("deletes are handled by the caller"),
    };
    let hash = op != WriteOp::Update || w.body.contains_key("password");
    body.insert("updated_at".into(), now.into());
    body.entry("created_at").or_insert(created_at.into());
    Ok(Prepared {
        status,
        id,
        created_at,
        body,
        hash,
    })
}

/// Kong's PATCH: fields of the body replace the stored ones, except records (a plugin's `config`), which
/// are merged field by field.
fn merge(into: &mut Map<String, Value>, patch: Map<String, Value>) {
    for (k, v) in patch {
        match (into.get_mut(&k), v) {
            (Some(Value::Object(old)), Value::Object(new)) if !old.is_empty() => merge(old, new),
            (_, v) => {
                into.insert(k, v);
            }
        }
    }
}

/// Validates the entity and inserts or replaces its row. Returns the entity as stored.
async fn store(
    tx: &Transaction<'_>,
    registry: &dyn PluginRegistry,
    w: &EntityWrite,
    p: Prepared,
    scope: Option<(&'static str, Uuid)>,
) -> Result<Value, WriteError> {
    let Prepared {
        id,
        created_at,
        mut body,
        hash,
        ..
    } = p;
    let mut refs = Vec::new();
    if let Some((field, parent)) = scope {
        refs.push((field, serde_json::json!({ "id": parent.to_string() })));
    }
    resolve_refs(tx, w.kind, &mut body, &mut refs).await?;
    let valid = validate_one(w.kind, body, id, refs, registry, hash).map_err(WriteError::Schema)?;
    let params = tables::row_params(
        w.kind,
        id,
        created_at,
        &valid.value,
        &valid.unique,
        &valid.foreign,
    );
    let sql = tables::insert_sql(w.kind, w.op != WriteOp::Create);
    let refs: Vec<&(dyn ToSql + Sync)> = params
        .iter()
        .map(|p| p.as_ref() as &(dyn ToSql + Sync))
        .collect();
    tx.execute(&statement(tx, &sql).await?, &refs)
        .await
        .map_err(|e| to_write_error(e, w.kind, Some(&valid.value)))?;
    Ok(valid.value)
}

pub(crate) fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

pub(crate) fn unavailable(e: tokio_postgres::Error) -> WriteError {
    WriteError::Unavailable(format!("the database connection failed: {e}"))
}

/// `sql` prepared once per pooled connection and then reused (deadpool's statement cache). A write's
/// statements are few and repeat for every write of a kind; sent as text, each cost PostgreSQL a parse
/// and a plan, and the node a round trip more (prepare, then execute), on every Admin write.
pub(crate) async fn statement(
    tx: &Transaction<'_>,
    sql: &str,
) -> Result<tokio_postgres::Statement, WriteError> {
    tx.prepare_cached(sql).await.map_err(internal)
}

pub(crate) fn internal(e: tokio_postgres::Error) -> WriteError {
    match e.as_db_error() {
        Some(_) => WriteError::Internal(e.to_string()),
        None => unavailable(e),
    }
}
