//! The entity kinds of a declarative file: their top-level keys, schemas and nesting.

use crate::schema::Schema;

/// One entity kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    Service,
    Route,
    Upstream,
    Target,
    Consumer,
    KeyAuth,
    BasicAuth,
    Acl,
    Plugin,
    Certificate,
    Sni,
    CaCertificate,
}

/// Every kind, in the order entities are built (parents before children).
pub const ALL: [Kind; 12] = [
    Kind::CaCertificate,
    Kind::Certificate,
    Kind::Sni,
    Kind::Service,
    Kind::Route,
    Kind::Upstream,
    Kind::Target,
    Kind::Consumer,
    Kind::KeyAuth,
    Kind::BasicAuth,
    Kind::Acl,
    Kind::Plugin,
];

impl Kind {
    /// The top-level key in a declarative file (and the Admin API collection name, mostly).
    pub fn key(self) -> &'static str {
        match self {
            Kind::Service => "services",
            Kind::Route => "routes",
            Kind::Upstream => "upstreams",
            Kind::Target => "targets",
            Kind::Consumer => "consumers",
            Kind::KeyAuth => "keyauth_credentials",
            Kind::BasicAuth => "basicauth_credentials",
            Kind::Acl => "acls",
            Kind::Plugin => "plugins",
            Kind::Certificate => "certificates",
            Kind::Sni => "snis",
            Kind::CaCertificate => "ca_certificates",
        }
    }

    /// Kong's singular name, used in error reports.
    pub fn singular(self) -> &'static str {
        match self {
            Kind::Service => "service",
            Kind::Route => "route",
            Kind::Upstream => "upstream",
            Kind::Target => "target",
            Kind::Consumer => "consumer",
            Kind::KeyAuth => "keyauth_credential",
            Kind::BasicAuth => "basicauth_credential",
            Kind::Acl => "acl",
            Kind::Plugin => "plugin",
            Kind::Certificate => "certificate",
            Kind::Sni => "sni",
            Kind::CaCertificate => "ca_certificate",
        }
    }

    pub fn from_key(key: &str) -> Option<Kind> {
        ALL.into_iter().find(|k| k.key() == key)
    }

    /// Kinds that may be nested under this one, with the foreign-key field the child gets.
    pub fn children(self) -> &'static [(Kind, &'static str)] {
        match self {
            Kind::Service => &[(Kind::Route, "service"), (Kind::Plugin, "service")],
            Kind::Route => &[(Kind::Plugin, "route")],
            Kind::Consumer => &[
                (Kind::Plugin, "consumer"),
                (Kind::KeyAuth, "consumer"),
                (Kind::BasicAuth, "consumer"),
                (Kind::Acl, "consumer"),
            ],
            Kind::Upstream => &[(Kind::Target, "upstream")],
            Kind::Certificate => &[(Kind::Sni, "certificate")],
            _ => &[],
        }
    }

    /// Foreign-key fields of this kind and the kind they point at.
    pub fn foreign_keys(self) -> &'static [(&'static str, Kind)] {
        match self {
            Kind::Route => &[("service", Kind::Service)],
            Kind::Target => &[("upstream", Kind::Upstream)],
            Kind::KeyAuth | Kind::BasicAuth | Kind::Acl => &[("consumer", Kind::Consumer)],
            Kind::Plugin => &[
                ("service", Kind::Service),
                ("route", Kind::Route),
                ("consumer", Kind::Consumer),
            ],
            Kind::Sni => &[("certificate", Kind::Certificate)],
            Kind::Service => &[("client_certificate", Kind::Certificate)],
            _ => &[],
        }
    }

    /// Fields by which entities of this kind can be referenced besides `id`.
    pub fn name_fields(self) -> &'static [&'static str] {
        match self {
            Kind::Service | Kind::Route | Kind::Upstream | Kind::Sni => &["name"],
            Kind::Consumer => &["username", "custom_id"],
            _ => &[],
        }
    }

    /// The entity schema, built once per process (validation asks for it once per entity).
    pub fn schema(self) -> &'static Schema {
        static SCHEMAS: std::sync::LazyLock<Vec<Schema>> = std::sync::LazyLock::new(|| {
            let mut kinds = ALL;
            kinds.sort();
            kinds.into_iter().map(Kind::build_schema).collect()
        });
        // `ALL` sorted is the declaration order, so the discriminant indexes the list.
        &SCHEMAS[self as usize]
    }

    fn build_schema(self) -> Schema {
        use super::schemas as s;
        match self {
            Kind::Service => s::service(),
            Kind::Route => s::route(),
            Kind::Upstream => s::upstream(),
            Kind::Target => s::target(),
            Kind::Consumer => s::consumer(),
            Kind::KeyAuth => s::keyauth_credential(),
            Kind::BasicAuth => s::basicauth_credential(),
            Kind::Acl => s::acl(),
            Kind::Plugin => s::plugin(),
            Kind::Certificate => s::certificate(),
            Kind::Sni => s::sni(),
            Kind::CaCertificate => s::ca_certificate(),
        }
    }
}
