//! DB mode's entity writes: the request becomes an [`EntityWrite`], the node runs it ([`Control::write`]),
//! and the result becomes Kong's reply. Refusals are [`ApiError::Write`], answered in `errors`.

use super::entities::owner_of;
use crate::catalog::{Collection, Relation};
use crate::errors::ApiError;
use crate::reply::{self, Reply};
use crate::router::Scope;
use crate::Control;
use bytes::Bytes;
use http::{Method, StatusCode};
use serde_json::{Map, Value};
use sluice_model::declarative::kinds::Kind;
use sluice_model::writes::{EntityWrite, ParentRef, WriteOp};

/// `POST /{collection}` and nested `POST /{parent}/{p}/{collection}`.
pub async fn create(
    control: &dyn Control,
    scope: &Scope<'_>,
    body: Bytes,
) -> Result<Reply, ApiError> {
    run(control, WriteOp::Create, scope, None, body).await
}

/// `PUT`, `PATCH` or `DELETE` of `/{collection}/{key}`, top-level or nested.
pub async fn item(
    control: &dyn Control,
    scope: &Scope<'_>,
    key: &str,
    method: &Method,
    body: Bytes,
) -> Result<Reply, ApiError> {
    run(control, op(method)?, scope, Some(key), body).await
}

/// `PUT` or `PATCH` of `/routes/{r}/service` and the other owners: a write to the owner entity. Deleting
/// an owner through its child is not allowed (405), as in Kong.
pub async fn owner(
    control: &dyn Control,
    child: &Collection,
    key: &str,
    relation: &Relation,
    method: &Method,
    body: Bytes,
) -> Result<Reply, ApiError> {
    let op = op(method)?;
    if op == WriteOp::Delete {
        return Err(ApiError::MethodNotAllowed);
    }
    let config = control.config();
    let owner_id = owner_of(&config, child, key, relation)?.id().to_string();
    let coll = crate::catalog::collection(relation.parent).ok_or(ApiError::NotFound)?;
    let scope = Scope { coll, parent: None };
    run(control, op, &scope, Some(&owner_id), body).await
}

fn op(method: &Method) -> Result<WriteOp, ApiError> {
    match *method {
        Method::PUT => Ok(WriteOp::Upsert),
        Method::PATCH => Ok(WriteOp::Update),
        Method::DELETE => Ok(WriteOp::Delete),
        _ => Err(ApiError::MethodNotAllowed),
    }
}

fn kind(coll: &Collection) -> Result<Kind, ApiError> {
    Kind::from_key(coll.schema)
        .ok_or_else(|| ApiError::Internal(format!("no kind {}", coll.schema)))
}

async fn run(
    control: &dyn Control,
    op: WriteOp,
    scope: &Scope<'_>,
    key: Option<&str>,
    body: Bytes,
) -> Result<Reply, ApiError> {
    let parent = match &scope.parent {
        Some(p) => Some(ParentRef {
            field: p.relation.field,
            kind: kind(p.coll)?,
            key: p.key.to_string(),
        }),
        None => None,
    };
    let body = match op {
        WriteOp::Delete => Map::new(),
        _ => json_object(&body)?,
    };
    let write = EntityWrite {
        op,
        kind: kind(scope.coll)?,
        key: key.map(str::to_string),
        parent,
        body,
    };
    let written = control.write(write).await.map_err(ApiError::Write)?;
    let status = StatusCode::from_u16(written.status).unwrap_or(StatusCode::OK);
    Ok(match written.entity {
        Some(entity) => reply::json(status, &entity),
        None => reply::empty(status),
    })
}

/// The request body as a JSON object; an empty body is an empty object.
fn json_object(body: &[u8]) -> Result<Map<String, Value>, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(Map::new());
    }
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(m)) => Ok(m),
        _ => Err(ApiError::BadRequest("Cannot parse JSON body".into())),
    }
}
