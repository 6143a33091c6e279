//! What PostgreSQL keeps per entity kind, derived from the model's kind table: the table (named as the
//! kind's declarative key), its UNIQUE columns (the kind's unique fields), its foreign-key columns (named as
//! the fields, with Kong's delete rule), and the `cache_key` of kinds whose uniqueness spans fields.

use serde_json::Value;
use sluice_model::declarative::kinds::Kind;
use tokio_postgres::types::ToSql;
use uuid::Uuid;

/// The fields whose combination Kong keeps unique for `kind` (its schema's `cache_key`), when that is
/// more than one field: a plugin per name and scope, a target per upstream, an ACL group per consumer.
pub fn cache_key_fields(kind: Kind) -> Option<&'static [&'static str]> {
    match kind {
        Kind::Plugin => Some(&["name", "route", "service", "consumer"]),
        Kind::Target => Some(&["upstream", "target"]),
        Kind::Acl => Some(&["consumer", "group"]),
        _ => None,
    }
}

/// The `cache_key` column's value: the fields' values joined, references by id, unset as empty.
pub fn cache_key(kind: Kind, entity: &Value) -> Option<String> {
    let fields = cache_key_fields(kind)?;
    let mut key = String::from(kind.key());
    for field in fields {
        key.push(':');
        match &entity[*field] {
            Value::String(s) => key.push_str(s),
            Value::Object(m) => key.push_str(m.get("id").and_then(Value::as_str).unwrap_or("")),
            _ => {}
        }
    }
    Some(key)
}

/// The columns an entity's row sets besides `id`, `created_at`, `tags` and `entity`, in a fixed order:
/// unique fields, foreign keys, then `cache_key`.
pub fn columns(kind: Kind) -> Vec<&'static str> {
    let mut cols: Vec<&'static str> = kind.unique_fields().to_vec();
    cols.extend(kind.references().iter().map(|fk| fk.field));
    if cache_key_fields(kind).is_some() {
        cols.push("cache_key");
    }
    cols
}

/// One statement parameter.
pub type Param = Box<dyn ToSql + Sync + Send>;

/// `INSERT INTO {kind} (id, created_at, tags, entity, columns...) VALUES ($1, ...)`, replacing the row with
/// the same id when `upsert`.
pub fn insert_sql(kind: Kind, upsert: bool) -> String {
    let names: Vec<String> = ["id", "created_at", "tags", "entity"]
        .iter()
        .copied()
        .chain(columns(kind))
        .map(|c| format!("\"{c}\""))
        .collect();
    let placeholders: Vec<String> = (1..=names.len()).map(|i| format!("${i}")).collect();
    let mut sql = format!(
        "INSERT INTO {} ({}) VALUES ({})",
        kind.key(),
        names.join(", "),
        placeholders.join(", ")
    );
    if upsert {
        let sets: Vec<String> = names[1..]
            .iter()
            .map(|c| format!("{c} = EXCLUDED.{c}"))
            .collect();
        sql.push_str(&format!(
            " ON CONFLICT (id) DO UPDATE SET {}",
            sets.join(", ")
        ));
    }
    sql
}

/// The parameters of [`insert_sql`] for one entity: its id, creation time, tags and JSON, then each of
/// [`columns`] from its natural keys, references and cache key.
pub fn row_params(
    kind: Kind,
    id: Uuid,
    created_at: i64,
    entity: &Value,
    unique: &[(&'static str, String)],
    foreign: &[(&'static str, Uuid)],
) -> Vec<Param> {
    let tags: Option<Vec<String>> = serde_json::from_value(entity["tags"].clone()).ok();
    let mut params: Vec<Param> = vec![
        Box::new(id),
        Box::new(created_at),
        Box::new(tags),
        Box::new(entity.clone()),
    ];
    for col in columns(kind) {
        if col == "cache_key" {
            params.push(Box::new(cache_key(kind, entity)));
        } else if kind.references().iter().any(|fk| fk.field == col) {
            let id = foreign.iter().find(|(f, _)| *f == col).map(|(_, v)| *v);
            params.push(Box::new(id));
        } else {
            let value = unique
                .iter()
                .find(|(f, _)| *f == col)
                .map(|(_, v)| v.clone());
            params.push(Box::new(value));
        }
    }
    params
}
