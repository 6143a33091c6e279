//! Entity reads (lists, items, nested lists, owners) and DB-less' refusal of entity writes.

use crate::catalog::{self, AdminEntity, Collection, Relation};
use crate::errors::ApiError;
use crate::pagination::ListQuery;
use crate::query;
use crate::reply::{self, Reply};
use crate::router::Scope;
use crate::EntityJson;
use http::Method;
use serde_json::{json, Value};
use sluice_model::Config;
use uuid::Uuid;

/// The entities `scope` addresses, in config order; 404 when the parent entity does not exist.
fn in_scope<'c>(
    config: &'c Config,
    scope: &Scope<'_>,
) -> Result<Vec<&'c dyn AdminEntity>, ApiError> {
    let items = (scope.coll.entities)(config);
    let Some(parent) = &scope.parent else {
        return Ok(items);
    };
    let parents = (parent.coll.entities)(config);
    let owner = catalog::find(&parents, parent.key).ok_or(ApiError::NotFound)?;
    let owner_id = owner.id();
    let field = parent.relation.field;
    Ok(items
        .into_iter()
        .filter(|e| e.foreign(field) == Some(owner_id))
        .collect())
}

/// `GET /{collection}` and nested lists: one page, at `base` (the request path, repeated in `next`).
pub fn list(
    config: &Config,
    scope: &Scope<'_>,
    base: &str,
    q: Option<&str>,
) -> Result<Reply, ApiError> {
    let items = in_scope(config, scope)?;
    if scope.coll.path == "consumers" && scope.parent.is_none() {
        if let Some(custom_id) = query::get(q, "custom_id") {
            return by_custom_id(&items, &custom_id);
        }
    }
    let list_query = ListQuery::parse(q)?;
    Ok(reply::ok(&list_query.page(base, &items)))
}

/// Kong's `GET /consumers?custom_id=x`: at most one consumer, never paginated.
fn by_custom_id(consumers: &[&dyn AdminEntity], custom_id: &str) -> Result<Reply, ApiError> {
    if custom_id.is_empty() {
        return Err(ApiError::BadRequest(
            "custom_id must be an unempty string".into(),
        ));
    }
    let data: Vec<Value> = consumers
        .iter()
        .map(|c| c.to_json())
        .filter(|c| c["custom_id"] == custom_id)
        .take(1)
        .collect();
    Ok(reply::ok(&json!({ "data": data, "next": Value::Null })))
}

/// `GET /{collection}/{key}` and nested items.
pub fn item(config: &Config, scope: &Scope<'_>, key: &str) -> Result<Reply, ApiError> {
    let items = in_scope(config, scope)?;
    let found = catalog::find(&items, key)
        .or_else(|| by_sni(config, scope, &items, key))
        .ok_or(ApiError::NotFound)?;
    Ok(reply::ok(&found.to_json()))
}

/// Kong's `/certificates/{sni}`: a certificate is also found by the name of one of its SNIs.
fn by_sni<'c>(
    config: &Config,
    scope: &Scope<'_>,
    items: &[&'c dyn AdminEntity],
    name: &str,
) -> Option<&'c dyn AdminEntity> {
    if scope.coll.path != "certificates" {
        return None;
    }
    let sni = config.snis.iter().find(|s| s.name == name)?;
    items.iter().find(|c| c.id() == sni.certificate.id).copied()
}

/// The entity a child's foreign key points at (`/routes/{r}/service`); 404 when unset or missing.
pub(super) fn owner_of<'c>(
    config: &'c Config,
    child: &Collection,
    key: &str,
    relation: &Relation,
) -> Result<&'c dyn AdminEntity, ApiError> {
    let children = (child.entities)(config);
    let entity = catalog::find(&children, key).ok_or(ApiError::NotFound)?;
    let owner_id = entity.foreign(relation.field).ok_or(ApiError::NotFound)?;
    let owners = catalog::collection(relation.parent)
        .map(|c| (c.entities)(config))
        .unwrap_or_default();
    owners
        .into_iter()
        .find(|o| o.id() == owner_id)
        .ok_or(ApiError::NotFound)
}

/// `GET /routes/{r}/service` and the other owner lookups.
pub fn owner(
    config: &Config,
    child: &Collection,
    key: &str,
    relation: &Relation,
) -> Result<Reply, ApiError> {
    Ok(reply::ok(
        &owner_of(config, child, key, relation)?.to_json(),
    ))
}

/// Kong's word for a write method in DB-less refusals.
fn operation(method: &Method) -> &'static str {
    match *method {
        Method::POST => "create",
        Method::PUT => "create or update",
        Method::PATCH => "update",
        _ => "remove",
    }
}

fn unsupported(op: &str, coll: &Collection, by: Option<&str>) -> ApiError {
    let by = by.map(|field| format!(" by '{field}'")).unwrap_or_default();
    ApiError::Unsupported(format!(
        "cannot {op} '{}' entities{by} when not using a database",
        coll.schema
    ))
}

/// A write to a list (POST): 404 when a nested list's parent is missing, else DB-less' refusal.
pub fn refuse_list_write(config: &Config, scope: &Scope<'_>, method: &Method) -> ApiError {
    match in_scope(config, scope) {
        Ok(_) => unsupported(operation(method), scope.coll, None),
        Err(e) => e,
    }
}

/// A write to an item, as Kong's DB-less DAO answers it: PUT is always refused; PATCH of a missing entity
/// is 404 and DELETE of one is 204 (the DAO looks it up first); otherwise refused, by id for a UUID key and
/// by the endpoint key for a name (Kong's `..._by_name` wording).
pub fn item_write(
    config: &Config,
    scope: &Scope<'_>,
    key: &str,
    method: &Method,
) -> Result<Reply, ApiError> {
    let items = in_scope(config, scope)?;
    let exists = catalog::find(&items, key).is_some();
    match *method {
        Method::PATCH if !exists => return Err(ApiError::NotFound),
        Method::DELETE if !exists => return Ok(reply::empty(http::StatusCode::NO_CONTENT)),
        _ => {}
    }
    let by = match Uuid::parse_str(key) {
        Ok(_) => None,
        Err(_) => scope.coll.endpoint_key,
    };
    Err(unsupported(operation(method), scope.coll, by))
}

/// A write to an owner (`PATCH /routes/{r}/service`): refused for the owner's collection; 404 when absent.
pub fn refuse_owner_write(
    config: &Config,
    child: &Collection,
    key: &str,
    relation: &Relation,
    method: &Method,
) -> ApiError {
    match (
        owner_of(config, child, key, relation),
        catalog::collection(relation.parent),
    ) {
        (Ok(_), Some(parent)) => unsupported(operation(method), parent, None),
        (Err(e), _) => e,
        (Ok(_), None) => ApiError::NotFound,
    }
}

/// Kong's `POST /config` success body, `{schema: {id: entity}}` for every non-empty collection, written
/// straight to bytes: for a large config this reply is as big as the config, so no `Value` tree is built.
/// Entities found in `json` (already serialized by the node) are copied, the others serialized here.
pub fn by_schema(config: &Config, json: Option<&EntityJson>) -> Vec<u8> {
    let given = |schema: &str, len: usize| {
        json.and_then(|j| j.iter().find(|(k, _)| *k == schema))
            .map(|(_, bodies)| bodies)
            .filter(|bodies| bodies.len() == len)
    };
    // `"<uuid>":` and a comma per entity around the bodies: the exact size when every body is given.
    let known: usize = json
        .into_iter()
        .flatten()
        .flat_map(|(_, b)| b)
        .map(|b| b.len() + 40)
        .sum();
    let mut out = Vec::with_capacity(4096 + known);
    out.push(b'{');
    let mut first_schema = true;
    for coll in catalog::COLLECTIONS {
        let items = (coll.entities)(config);
        if items.is_empty() {
            continue;
        }
        if !std::mem::take(&mut first_schema) {
            out.push(b',');
        }
        out.extend_from_slice(format!("\"{}\":{{", coll.schema).as_bytes());
        let bodies = given(coll.schema, items.len());
        for (i, e) in items.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.extend_from_slice(format!("\"{}\":", e.id()).as_bytes());
            match bodies {
                Some(bodies) => out.extend_from_slice(&bodies[i]),
                None => e.write_json(&mut out),
            }
        }
        out.push(b'}');
    }
    out.push(b'}');
    out
}

#[cfg(test)]
mod tests;
