//! `sluice config db_import`: a validated declarative config written into the database in one transaction,
//! as Kong's `kong config db_import` does. Entities are inserted, or replaced when their id exists, parents
//! first; the transaction bumps the version once and notifies, so running nodes pick the whole import up as
//! one change.

use crate::errors::to_write_error;
use crate::tables;
use sluice_model::declarative::kinds::{Kind, ALL};
use sluice_model::{records, Config};
use std::collections::BTreeMap;
use tokio_postgres::types::ToSql;
use tokio_postgres::Client;

/// One entity's record, owned.
struct Owned {
    id: uuid::Uuid,
    body: Vec<u8>,
    unique: Vec<(&'static str, String)>,
    foreign: Vec<(&'static str, uuid::Uuid)>,
}

/// Imports `config`; returns the number of entities written.
pub async fn import(client: &mut Client, config: &Config) -> Result<usize, String> {
    let mut by_kind: BTreeMap<Kind, Vec<Owned>> = BTreeMap::new();
    records::for_each_record(config, |r| {
        if let Some(kind) = Kind::from_key(r.kind) {
            by_kind.entry(kind).or_default().push(Owned {
                id: r.id,
                body: r.body,
                unique: r.unique.iter().map(|(f, v)| (*f, v.to_string())).collect(),
                foreign: r.foreign,
            });
        }
    });
    let tx = client.transaction().await.map_err(|e| e.to_string())?;
    let version = crate::begin_change(&tx).await.map_err(|e| e.to_string())?;
    let mut written = 0;
    for kind in ALL {
        let Some(records) = by_kind.get(&kind) else {
            continue;
        };
        let statement = tx
            .prepare(&tables::insert_sql(kind, true))
            .await
            .map_err(|e| e.to_string())?;
        for r in records {
            let entity: serde_json::Value =
                serde_json::from_slice(&r.body).map_err(|e| e.to_string())?;
            let created_at = entity["created_at"].as_i64().unwrap_or(0);
            let params = tables::row_params(kind, r.id, created_at, &entity, &r.unique, &r.foreign);
            let refs: Vec<&(dyn ToSql + Sync)> = params
                .iter()
                .map(|p| p.as_ref() as &(dyn ToSql + Sync))
                .collect();
            tx.execute(&statement, &refs).await.map_err(|e| {
                format!(
                    "{} {}: {:?}",
                    kind.singular(),
                    r.id,
                    to_write_error(e, kind, Some(&entity))
                )
            })?;
            written += 1;
        }
    }
    crate::end_change(&tx, version)
        .await
        .map_err(|e| e.to_string())?;
    tx.commit().await.map_err(|e| e.to_string())?;
    Ok(written)
}
