//! A certificate's inline `snis`: written with it, in the write's own transaction.

use super::{internal, now, to_write_error};
use crate::tables;
use deadpool_postgres::Transaction;
use serde_json::{Map, Value};
use sluice_model::declarative::kinds::Kind;
use sluice_model::declarative::validate_one;
use sluice_model::writes::WriteError;
use sluice_model::PluginRegistry;
use tokio_postgres::types::ToSql;
use uuid::Uuid;

/// A certificate written with `snis: [...]` owns exactly those SNIs afterwards (Kong creates and removes
/// them with it, in the same transaction). Returns the names, as the certificate's reply lists them.
pub(super) async fn sync_snis(
    tx: &Transaction<'_>,
    registry: &dyn PluginRegistry,
    cert: &Value,
    names: Vec<Value>,
) -> Result<Value, WriteError> {
    let cert_id = cert["id"]
        .as_str()
        .and_then(|s| Uuid::parse_str(s).ok())
        .unwrap_or_default();
    let wanted: Vec<String> = names
        .iter()
        .filter_map(|n| n.as_str().map(str::to_string))
        .collect();
    tx.execute(
        "DELETE FROM snis WHERE certificate = $1 AND NOT (name = ANY($2))",
        &[&cert_id, &wanted],
    )
    .await
    .map_err(|e| to_write_error(e, Kind::Sni, None))?;
    for name in &wanted {
        let exists = tx
            .query_opt(
                "SELECT 1 FROM snis WHERE certificate = $1 AND name = $2",
                &[&cert_id, name],
            )
            .await
            .map_err(internal)?;
        if exists.is_some() {
            continue;
        }
        let mut body = Map::new();
        body.insert("name".into(), Value::String(name.clone()));
        body.insert("created_at".into(), now().into());
        let refs = vec![(
            "certificate",
            serde_json::json!({ "id": cert_id.to_string() }),
        )];
        let id = Uuid::new_v4();
        let sni = validate_one(Kind::Sni, body, id, refs, registry, false).map_err(|errs| {
            WriteError::Schema(errs.into_iter().map(|e| e.nested("snis")).collect())
        })?;
        let params =
            tables::row_params(Kind::Sni, id, now(), &sni.value, &sni.unique, &sni.foreign);
        let refs: Vec<&(dyn ToSql + Sync)> = params
            .iter()
            .map(|p| p.as_ref() as &(dyn ToSql + Sync))
            .collect();
        tx.execute(&tables::insert_sql(Kind::Sni, false), &refs)
            .await
            .map_err(|e| to_write_error(e, Kind::Sni, Some(&sni.value)))?;
    }
    Ok(Value::Array(
        wanted.into_iter().map(Value::String).collect(),
    ))
}
