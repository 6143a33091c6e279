//! A write to one entity (DB mode's Admin API) and the ways it can fail, with Kong's DAO error codes.
//!
//! Pure types shared by the Admin API (which turns a [`WriteError`] into Kong's response) and the database
//! layer (which produces them from constraint violations), so neither depends on the other.

use crate::declarative::kinds::Kind;
use crate::schema::FieldError;
use serde_json::{Map, Value};

/// Kong's write methods.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteOp {
    /// `POST /{entity}`: insert; 201.
    Create,
    /// `PUT /{entity}/{key}`: insert or replace whole (unset fields back to defaults); 200.
    Upsert,
    /// `PATCH /{entity}/{key}`: merge into the existing entity; 200, or 404 when missing.
    Update,
    /// `DELETE /{entity}/{key}`: 204, also when missing.
    Delete,
}

/// The parent of a nested path (`/services/{s}/routes`): the child's foreign key `field` must point at the
/// parent entity with `key` (id or endpoint key).
#[derive(Debug, Clone)]
pub struct ParentRef {
    pub field: &'static str,
    pub kind: Kind,
    pub key: String,
}

/// One entity write as the Admin API received it.
#[derive(Debug, Clone)]
pub struct EntityWrite {
    pub op: WriteOp,
    pub kind: Kind,
    /// The path's item key (a UUID or the kind's endpoint key); None for a `POST`.
    pub key: Option<String>,
    pub parent: Option<ParentRef>,
    /// The request body (empty for `DELETE`).
    pub body: Map<String, Value>,
}

/// What a successful write answers.
#[derive(Debug, Clone)]
pub struct Written {
    /// 201, 200 or 204.
    pub status: u16,
    /// The entity as stored (none for 204).
    pub entity: Option<Value>,
}

/// Why a write was refused. Codes are Kong's (`kong/db/errors.lua`).
#[derive(Debug, Clone, PartialEq)]
pub enum WriteError {
    /// Code 2, 400: the entity fails its schema; every field error.
    Schema(Vec<FieldError>),
    /// Code 3, 400: the primary key is not a UUID.
    PrimaryKey(String),
    /// Code 4, 400: a reference to a missing entity, or a delete another entity's reference blocks.
    ForeignKey { message: String, fields: Value },
    /// Code 5, 409: a unique field is taken.
    Unique { message: String, fields: Value },
    /// Code 6, 404.
    NotFound,
    /// 503: the database cannot be reached; the message says so.
    Unavailable(String),
    /// 500; logged, never sent.
    Internal(String),
}

impl WriteError {
    /// A schema violation on one field.
    pub fn field(field: &str, message: impl Into<String>) -> WriteError {
        WriteError::Schema(vec![FieldError::new(field, message)])
    }
}
