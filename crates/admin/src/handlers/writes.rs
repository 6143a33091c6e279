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

/// A write's body as received: its `Content-Type` and bytes.
pub struct Body<'a> {
    pub content_type: &'a str,
    pub bytes: Bytes,
}

/// `POST /{collection}` and nested `POST /{parent}/{p}/{collection}`.
pub async fn create(
    control: &dyn Control,
    scope: &Scope<'_>,
    body: Body<'_>,
) -> Result<Reply, ApiError> {
    run(control, WriteOp::Create, scope, None, body).await
}

/// `PUT`, `PATCH` or `DELETE` of `/{collection}/{key}`, top-level or nested.
pub async fn item(
    control: &dyn Control,
    scope: &Scope<'_>,
    key: &str,
    method: &Method,
    body: Body<'_>,
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
    body: Body<'_>,
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
    body: Body<'_>,
) -> Result<Reply, ApiError> {
    let parent = match &scope.parent {
        Some(p) => Some(ParentRef {
            field: p.relation.field,
            kind: kind(p.coll)?,
            key: p.key.to_string(),
        }),
        None => None,
    };
    let kind = kind(scope.coll)?;
    let body = match op {
        WriteOp::Delete => Map::new(),
        _ => object(control, kind, &body)?,
    };
    let write = EntityWrite {
        op,
        kind,
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

/// The request body as a JSON object: JSON as it is, a form (`application/x-www-form-urlencoded`)
/// decoded and its strings converted to the entity's field types (a plugin's `config` by the plugin's
/// schema). An empty body is an empty object.
fn object(
    control: &dyn Control,
    kind: Kind,
    body: &Body<'_>,
) -> Result<Map<String, Value>, ApiError> {
    let bytes = &body.bytes;
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(Map::new());
    }
    let ct = body.content_type.to_ascii_lowercase();
    if !ct.starts_with("application/x-www-form-urlencoded") {
        return crate::body::json_object(bytes);
    }
    let text = std::str::from_utf8(bytes)
        .map_err(|_| ApiError::BadRequest("the form body is not UTF-8".into()))?;
    let mut m = crate::form::decode(text);
    kind.schema().infer(&mut m);
    if kind == Kind::Plugin {
        let name = m
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let def = control.registry().and_then(|r| r.plugin(&name));
        if let (Some(def), Some(Value::Object(config))) = (def, m.get_mut("config")) {
            def.config.infer(config);
        }
    }
    Ok(m)
}
