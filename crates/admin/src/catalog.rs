//! What the Admin API can list: each collection's path, Kong schema name, endpoint key and entities, and the
//! parent → child relations behind nested paths like `/services/{s}/routes`.
//!
//! Entities are handled as `&dyn AdminEntity` so filtering (tags, parent, lookup) works on the typed model and
//! only the entities actually returned are serialized: a page of 100 out of 10,000 routes costs 100
//! serializations, not 10,000.

use serde_json::Value;
use sluice_model::{
    Acl, BasicAuthCredential, CaCertificate, Certificate, Config, Consumer, KeyAuthCredential,
    Plugin, Ref, Route, Service, Sni, Target, Upstream,
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

/// Every collection this node serves, in the order `POST /config` reports them.
pub const COLLECTIONS: &[Collection] = &[
    Collection {
        path: "services",
        schema: "services",
        endpoint_key: Some("name"),
        entities: |c| all(&c.services),
    },
    Collection {
        path: "routes",
        schema: "routes",
        endpoint_key: Some("name"),
        entities: |c| all(&c.routes),
    },
    Collection {
        path: "upstreams",
        schema: "upstreams",
        endpoint_key: Some("name"),
        entities: |c| all(&c.upstreams),
    },
    Collection {
        path: "targets",
        schema: "targets",
        endpoint_key: Some("target"),
        entities: |c| all(&c.targets),
    },
    Collection {
        path: "consumers",
        schema: "consumers",
        endpoint_key: Some("username"),
        entities: |c| all(&c.consumers),
    },
    Collection {
        path: "key-auths",
        schema: "keyauth_credentials",
        endpoint_key: Some("key"),
        entities: |c| all(&c.keyauth_credentials),
    },
    Collection {
        path: "basic-auths",
        schema: "basicauth_credentials",
        endpoint_key: Some("username"),
        entities: |c| all(&c.basicauth_credentials),
    },
    Collection {
        path: "acls",
        schema: "acls",
        endpoint_key: None,
        entities: |c| all(&c.acls),
    },
    Collection {
        path: "plugins",
        schema: "plugins",
        endpoint_key: Some("instance_name"),
        entities: |c| all(&c.plugins),
    },
    Collection {
        path: "certificates",
        schema: "certificates",
        endpoint_key: None,
        entities: |c| all(&c.certificates),
    },
    Collection {
        path: "snis",
        schema: "snis",
        endpoint_key: Some("name"),
        entities: |c| all(&c.snis),
    },
    Collection {
        path: "ca_certificates",
        schema: "ca_certificates",
        endpoint_key: None,
        entities: |c| all(&c.ca_certificates),
    },
];

/// Every nested collection path.
pub const RELATIONS: &[Relation] = &[
    Relation {
        parent: "services",
        segment: "routes",
        child: "routes",
        field: "service",
    },
    Relation {
        parent: "services",
        segment: "plugins",
        child: "plugins",
        field: "service",
    },
    Relation {
        parent: "routes",
        segment: "plugins",
        child: "plugins",
        field: "route",
    },
    Relation {
        parent: "consumers",
        segment: "plugins",
        child: "plugins",
        field: "consumer",
    },
    Relation {
        parent: "consumers",
        segment: "key-auth",
        child: "key-auths",
        field: "consumer",
    },
    Relation {
        parent: "consumers",
        segment: "basic-auth",
        child: "basic-auths",
        field: "consumer",
    },
    Relation {
        parent: "consumers",
        segment: "acls",
        child: "acls",
        field: "consumer",
    },
    Relation {
        parent: "upstreams",
        segment: "targets",
        child: "targets",
        field: "upstream",
    },
    Relation {
        parent: "certificates",
        segment: "snis",
        child: "snis",
        field: "certificate",
    },
];

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

fn id_of(r: &Option<Ref>) -> Option<Uuid> {
    r.map(|r| r.id)
}

/// Implements [`AdminEntity`] for a model type: `key` reads the endpoint key, `foreign` maps field names to ids.
macro_rules! admin_entity {
    ($ty:ty, |$e:ident| key: $key:expr, foreign: { $($field:literal => $fk:expr),* $(,)? }) => {
        impl AdminEntity for $ty {
            fn id(&self) -> Uuid {
                self.id
            }
            fn tags(&self) -> &[String] {
                tags(&self.tags)
            }
            #[allow(unused_variables)]
            fn endpoint_key(&self) -> Option<&str> {
                let $e = self;
                $key
            }
            #[allow(unused_variables)]
            fn foreign(&self, field: &str) -> Option<Uuid> {
                let $e = self;
                match field {
                    $($field => $fk,)*
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
        }
    };
}

admin_entity!(Service, |e| key: e.name.as_deref(), foreign: {});
admin_entity!(Route, |e| key: e.name.as_deref(), foreign: { "service" => id_of(&e.service) });
admin_entity!(Upstream, |e| key: Some(e.name.as_str()), foreign: {});
admin_entity!(Target, |e| key: Some(e.target.as_str()), foreign: { "upstream" => Some(e.upstream.id) });
admin_entity!(Consumer, |e| key: e.username.as_deref(), foreign: {});
admin_entity!(KeyAuthCredential, |e| key: Some(e.key.as_str()), foreign: {
    "consumer" => Some(e.consumer.id),
});
admin_entity!(BasicAuthCredential, |e| key: Some(e.username.as_str()), foreign: {
    "consumer" => Some(e.consumer.id),
});
admin_entity!(Acl, |e| key: None, foreign: { "consumer" => Some(e.consumer.id) });
admin_entity!(Plugin, |e| key: e.instance_name.as_deref(), foreign: {
    "service" => id_of(&e.service),
    "route" => id_of(&e.route),
    "consumer" => id_of(&e.consumer),
});
admin_entity!(Certificate, |e| key: None, foreign: {});
admin_entity!(Sni, |e| key: Some(e.name.as_str()), foreign: { "certificate" => Some(e.certificate.id) });
admin_entity!(CaCertificate, |e| key: None, foreign: {});

#[cfg(test)]
mod tests;
