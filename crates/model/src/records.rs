//! The config as flat records for a key-value store (the LMDB config store): each entity's JSON with the
//! natural keys and references a store indexes. Serialized from the typed entities directly, one at a
//! time, so committing a large config never builds a second copy of it.

use crate::entities::*;
use crate::Config;
use serde::Serialize;
use uuid::Uuid;

/// One entity, ready to be written.
pub struct Record<'a> {
    /// The entity kind's top-level key (`routes`, `keyauth_credentials`, ...).
    pub kind: &'static str,
    pub id: Uuid,
    /// The entity as JSON, in the shape [`crate::declarative::from_store`] reads back.
    pub body: Vec<u8>,
    /// Natural keys, e.g. `("name", "svc-a")`, unique per kind.
    pub unique: Vec<(&'static str, &'a str)>,
    /// References as (field, referenced id), e.g. `("service", <uuid>)`.
    pub foreign: Vec<(&'static str, Uuid)>,
}

/// What a store needs to know about one entity type beyond its JSON.
trait Keys: Serialize {
    fn id(&self) -> Uuid;
    fn unique(&self) -> Vec<(&'static str, &str)> {
        Vec::new()
    }
    fn foreign(&self) -> Vec<(&'static str, Uuid)> {
        Vec::new()
    }
}

/// `(field, value)` pairs for the optional keys that are set.
fn set<'a, const N: usize>(
    fields: [(&'static str, Option<&'a str>); N],
) -> Vec<(&'static str, &'a str)> {
    fields
        .into_iter()
        .filter_map(|(f, v)| v.map(|v| (f, v)))
        .collect()
}

/// `(field, id)` pairs for the references that are set.
fn refs<const N: usize>(fields: [(&'static str, Option<Ref>); N]) -> Vec<(&'static str, Uuid)> {
    fields
        .into_iter()
        .filter_map(|(f, r)| r.map(|r| (f, r.id)))
        .collect()
}

impl Keys for Service {
    fn id(&self) -> Uuid {
        self.id
    }
    fn unique(&self) -> Vec<(&'static str, &str)> {
        set([("name", self.name.as_deref())])
    }
    fn foreign(&self) -> Vec<(&'static str, Uuid)> {
        refs([("client_certificate", self.client_certificate)])
    }
}

impl Keys for Route {
    fn id(&self) -> Uuid {
        self.id
    }
    fn unique(&self) -> Vec<(&'static str, &str)> {
        set([("name", self.name.as_deref())])
    }
    fn foreign(&self) -> Vec<(&'static str, Uuid)> {
        refs([("service", self.service)])
    }
}

impl Keys for Upstream {
    fn id(&self) -> Uuid {
        self.id
    }
    fn unique(&self) -> Vec<(&'static str, &str)> {
        set([("name", Some(self.name.as_str()))])
    }
}

impl Keys for Target {
    fn id(&self) -> Uuid {
        self.id
    }
    fn foreign(&self) -> Vec<(&'static str, Uuid)> {
        refs([("upstream", Some(self.upstream))])
    }
}

impl Keys for Consumer {
    fn id(&self) -> Uuid {
        self.id
    }
    fn unique(&self) -> Vec<(&'static str, &str)> {
        set([
            ("username", self.username.as_deref()),
            ("custom_id", self.custom_id.as_deref()),
        ])
    }
}

impl Keys for KeyAuthCredential {
    fn id(&self) -> Uuid {
        self.id
    }
    fn unique(&self) -> Vec<(&'static str, &str)> {
        set([("key", Some(self.key.as_str()))])
    }
    fn foreign(&self) -> Vec<(&'static str, Uuid)> {
        refs([("consumer", Some(self.consumer))])
    }
}

impl Keys for BasicAuthCredential {
    fn id(&self) -> Uuid {
        self.id
    }
    fn unique(&self) -> Vec<(&'static str, &str)> {
        set([("username", Some(self.username.as_str()))])
    }
    fn foreign(&self) -> Vec<(&'static str, Uuid)> {
        refs([("consumer", Some(self.consumer))])
    }
}

impl Keys for Acl {
    fn id(&self) -> Uuid {
        self.id
    }
    fn foreign(&self) -> Vec<(&'static str, Uuid)> {
        refs([("consumer", Some(self.consumer))])
    }
}

impl Keys for Plugin {
    fn id(&self) -> Uuid {
        self.id
    }
    fn foreign(&self) -> Vec<(&'static str, Uuid)> {
        refs([
            ("service", self.service),
            ("route", self.route),
            ("consumer", self.consumer),
        ])
    }
}

impl Keys for Certificate {
    fn id(&self) -> Uuid {
        self.id
    }
}

impl Keys for Sni {
    fn id(&self) -> Uuid {
        self.id
    }
    fn unique(&self) -> Vec<(&'static str, &str)> {
        set([("name", Some(self.name.as_str()))])
    }
    fn foreign(&self) -> Vec<(&'static str, Uuid)> {
        refs([("certificate", Some(self.certificate))])
    }
}

impl Keys for CaCertificate {
    fn id(&self) -> Uuid {
        self.id
    }
}

/// Visits every entity of `config` as a [`Record`], kinds in the flat export's order, entities in config
/// order (which is the order ties are broken by, so a store must keep it).
pub fn for_each_record(config: &Config, mut f: impl FnMut(Record<'_>)) {
    fn each<'a, T: Keys>(kind: &'static str, items: &'a [T], f: &mut dyn FnMut(Record<'a>)) {
        for item in items {
            f(Record {
                kind,
                id: item.id(),
                // Serializing a typed entity into memory cannot fail.
                body: serde_json::to_vec(item).unwrap_or_default(),
                unique: item.unique(),
                foreign: item.foreign(),
            });
        }
    }
    crate::entities::each_entity_list!(config, each, &mut f);
}
