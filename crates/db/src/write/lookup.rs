//! Finding the entities a write names: the item and its parent by id or endpoint key, and foreign keys
//! given by endpoint key.

use super::{internal, statement, Stored};
use deadpool_postgres::Transaction;
use serde_json::{Map, Value};
use sluice_model::declarative::kinds::Kind;
use sluice_model::writes::WriteError;
use tokio_postgres::types::ToSql;
use uuid::Uuid;

/// Foreign keys given by endpoint key (`"service": {"name": "s"}`) become `{"id": ...}` references;
/// references by id are left for PostgreSQL to check.
pub(super) async fn resolve_refs(
    tx: &Transaction<'_>,
    kind: Kind,
    body: &mut Map<String, Value>,
    refs: &mut Vec<(&'static str, Value)>,
) -> Result<(), WriteError> {
    for fk in kind.references() {
        if refs.iter().any(|(f, _)| *f == fk.field) {
            continue;
        }
        let Some(Value::Object(given)) = body.get(fk.field) else {
            continue;
        };
        if given.contains_key("id") {
            continue;
        }
        let Some(endpoint) = fk.parent.endpoint_key() else {
            continue;
        };
        let Some(key) = given.get(endpoint).and_then(Value::as_str) else {
            continue;
        };
        let Some(found) = find(tx, fk.parent, key, None).await? else {
            let message = format!(
                "the foreign key '{}' does not reference an existing '{}' entity.",
                crate::errors::lua(&Value::Object(given.clone())),
                fk.parent.key()
            );
            return Err(WriteError::ForeignKey {
                fields: serde_json::json!({ fk.field: message }),
                message,
            });
        };
        refs.push((fk.field, serde_json::json!({ "id": found.id.to_string() })));
    }
    Ok(())
}

/// The entity of `kind` with id or endpoint key `key` (under `scope`'s parent when given), locked for the
/// rest of the transaction.
pub(super) async fn find(
    tx: &Transaction<'_>,
    kind: Kind,
    key: &str,
    scope: Option<(&'static str, Uuid)>,
) -> Result<Option<Stored>, WriteError> {
    let table = kind.key();
    let (mut sql, key_param): (String, Box<dyn ToSql + Sync + Send>) = match Uuid::parse_str(key) {
        Ok(id) => (
            format!("SELECT id, created_at, entity FROM {table} WHERE id = $1"),
            Box::new(id),
        ),
        Err(_) => {
            let Some(field) = kind.endpoint_key() else {
                return Ok(None);
            };
            let column = match kind.unique_fields().contains(&field) {
                true => format!("\"{field}\""),
                false => format!("entity->>'{field}'"),
            };
            (
                format!("SELECT id, created_at, entity FROM {table} WHERE {column} = $1"),
                Box::new(key.to_string()),
            )
        }
    };
    let key = key_param.as_ref() as &(dyn ToSql + Sync);
    let rows = match scope {
        Some((field, parent)) => {
            sql.push_str(&format!(" AND \"{field}\" = $2 FOR UPDATE"));
            tx.query(&statement(tx, &sql).await?, &[key, &parent]).await
        }
        None => {
            sql.push_str(" FOR UPDATE");
            tx.query(&statement(tx, &sql).await?, &[key]).await
        }
    }
    .map_err(internal)?;
    Ok(rows.first().map(|r| Stored {
        id: r.get(0),
        created_at: r.get(1),
        entity: r.get(2),
    }))
}
