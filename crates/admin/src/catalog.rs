//! What the Admin API can list: each collection's path, Kong schema name, endpoint key and entities, and the
//! parent → child relations behind nested paths like `/services/{s}/routes`.
//!
//! Entities are handled as `&dyn AdminEntity` so filtering (tags, parent, lookup) works on the typed model and
//! only the entities actually returned are serialized: a page of 100 out of 10,000 routes costs 100
//! serializations, not 10,000.

use serde_json::Value;
use sluice_model::declarative::kinds::Kind;
use sluice_model::records::{KeyField, RefField};
use sluice_model::{
    Acl, BasicAuthCredential, CaCertificate, Certificate, Config, Consumer, HmacAuthCredential,
    JwtSecret, KeyAuthCredential, OAuth2Credential, Plugin, Route, Service, Sni, Target, Upstream,
};
use uuid::Uuid;

/// One entity as the Admin API sees it.
pub trait AdminEntity {
    fn id(&self) -> Uuid;
    /// The entity's tags (empty when it has none).
    fn tags(&self) -> &[String];
    /// The value of the collection's endpoint key (`name`, `username`, `key`, ...), when it has one.
    fn endpoint_key(&self) -> Option<&str>;
    /// The id held by foreign-key field `field` (`service`, `consumer`, ...), when set.
    fn foreign(&self, field: &str) -> Option<Uuid>;
    /// The entity in Kong's Admin API shape.
    fn to_json(&self) -> Value;
    /// Appends the entity's JSON to `out` without building a `Value` (large `POST /config` replies).
    fn write_json(&self, out: &mut Vec<u8>);
}

/// One top-level Admin API collection.
pub struct Collection {
    /// The path segment: `services`, `key-auths`, ...
    pub path: &'static str,
    /// Kong's schema name, used in DB-less refusal messages and `POST /config` responses.
    pub schema: &'static str,
    /// The field besides `id` that `/{path}/{key}` accepts (Kong's `endpoint_key`).
    pub endpoint_key: Option<&'static str>,
    /// Every entity of the collection, in config (creation) order.
    pub entities: fn(&Config) -> Vec<&dyn AdminEntity>,
}

/// A nested collection: `/{parent}/{x}/{segment}` lists the `child` entities whose `field` points at `x`.
pub struct Relation {
    pub parent: &'static str,
    pub segment: &'static str,
    pub child: &'static str,
    pub field: &'static str,
}

fn all<T: AdminEntity>(items: &[T]) -> Vec<&dyn AdminEntity> {
    items.iter().map(|i| i as &dyn AdminEntity).collect()
}

/// The catalog from [`sluice_model::kind_table`]: `COLLECTIONS` (every collection this node serves, in the
/// order `POST /config` reports them), `RELATIONS` (every nested collection path) and [`AdminEntity`] for each
/// entity type (endpoint key and foreign keys from the table's columns).
macro_rules! catalog {
    ([] $( $variant:ident ($ty:ident) {
        key: $key:ident, singular: $singular:literal, schema: $schema:ident, build: $rank:literal,
        admin: $path:literal, endpoint: [$($endpoint:ident)?],
        refs: [$($reffield:literal),*], unique: [$($uniq:ident),*],
        fks: [$($fkfield:ident -> $fkparent:ident $rule:ident),*],
        nests: [$($nchild:ident . $nfield:ident as $nseg:literal),* $(,)?],
    } )*) => {
        /// Every collection this node serves, in the order `POST /config` reports them.
        pub const COLLECTIONS: &[Collection] = &[$(Collection {
            path: $path,
            schema: stringify!($key),
            endpoint_key: Kind::$variant.endpoint_key(),
            entities: |c| all(&c.$key),
        }),*];

        /// Every nested collection path.
        pub const RELATIONS: &[Relation] = &[$($(Relation {
            parent: $path,
            segment: $nseg,
            child: Kind::$nchild.admin_path(),
            field: stringify!($nfield),
        },)*)*];

        $(impl AdminEntity for $ty {
            fn id(&self) -> Uuid {
                self.id
            }
            fn tags(&self) -> &[String] {
                tags(&self.tags)
            }
            fn endpoint_key(&self) -> Option<&str> {
                endpoint_value!(self $(, $endpoint)?)
            }
            fn foreign(&self, field: &str) -> Option<Uuid> {
                match field {
                    $(stringify!($fkfield) => self.$fkfield.ref_id(),)*
                    _ => None,
                }
            }
            fn to_json(&self) -> Value {
                serde_json::to_value(self).unwrap_or(Value::Null)
            }
            fn write_json(&self, out: &mut Vec<u8>) {
                // Serializing a validated entity into memory cannot fail.
                let _ = serde_json::to_writer(out, self);
            }
        })*
    };
}

/// The value of an entity's endpoint-key field, when the kind has one.
macro_rules! endpoint_value {
    ($e:ident) => {
        None
    };
    ($e:ident, $field:ident) => {
        $e.$field.key_str()
    };
}

sluice_model::entity_kinds!(catalog);

/// The collection served at `/{path}`.
pub fn collection(path: &str) -> Option<&'static Collection> {
    COLLECTIONS.iter().find(|c| c.path == path)
}

/// The nested collection served at `/{parent}/{x}/{segment}`.
pub fn relation(parent: &str, segment: &str) -> Option<&'static Relation> {
    RELATIONS
        .iter()
        .find(|r| r.parent == parent && r.segment == segment)
}

/// Kong's lookup of `/{collection}/{key}`: a UUID selects by id only, anything else by the endpoint key.
pub fn find<'c>(items: &[&'c dyn AdminEntity], key: &str) -> Option<&'c dyn AdminEntity> {
    match Uuid::parse_str(key) {
        Ok(id) => items.iter().find(|e| e.id() == id).copied(),
        Err(_) => items
            .iter()
            .find(|e| e.endpoint_key() == Some(key))
            .copied(),
    }
}

fn tags(tags: &Option<Vec<String>>) -> &[String] {
    tags.as_deref().unwrap_or(&[])
}

#[cfg(test)]
mod tests;
