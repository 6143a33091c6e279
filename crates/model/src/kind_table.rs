//! Every entity kind, each declared exactly once.
//!
//! [`entity_kinds!`] hands the table to a macro of the caller's, which derives what it needs from it: the
//! [`crate::declarative::Kind`] enum with its keys, schemas, build order, references and nesting; the
//! [`crate::Config`] lists and the walk over them; typed storage (push and reserve); entity counts; the
//! store's records (natural keys and references); and the Admin API catalog (paths, endpoint keys, nested
//! paths, foreign keys and their delete rules). Adding a kind is one row here plus its entity type and
//! schema function (`docs/architecture.md` has the recipe); `kind_table::tests` fails when a derived list
//! misses a kind.
//!
//! A row, in the order of [`crate::Config`]'s lists (the flat export's and the Admin catalog's order):
//! ```text
//! Variant(EntityType) {
//!     key: config_list_and_declarative_key, singular: "Kong's singular name", schema: schemas_fn,
//!     build: rank (parents first; ties never happen),
//!     admin: "collection path", endpoint: [field] or [],
//!     refs: ["fields another entity may reference this one by, besides id"],
//!     unique: [unique_fields_for_the_store],
//!     fks: [field -> ParentVariant on_delete],
//!     nests: [ChildVariant.field as "admin segment", ...],   // children nested under this kind, in order
//! }
//! ```
//! `on_delete` is Kong's rule when the referenced entity is deleted: `cascade` deletes this one too,
//! `restrict` refuses the delete while this one exists.

/// Calls `$then! { [args] rows }` with the table (see the module docs for the row shape); `args` are the
/// tokens given after a `;`, passed through for the callback's own use.
#[macro_export]
macro_rules! entity_kinds {
    ($($then:ident)::+ $(; $($args:tt)*)?) => {
        $($then)::+! {
            [$($($args)*)?]
            Service(Service) {
                key: services, singular: "service", schema: service, build: 3,
                admin: "services", endpoint: [name],
                refs: ["name"], unique: [name],
                fks: [client_certificate -> Certificate restrict],
                nests: [Route.service as "routes", Plugin.service as "plugins"],
            }
            Route(Route) {
                key: routes, singular: "route", schema: route, build: 4,
                admin: "routes", endpoint: [name],
                refs: ["name"], unique: [name],
                fks: [service -> Service restrict],
                nests: [Plugin.route as "plugins"],
            }
            Upstream(Upstream) {
                key: upstreams, singular: "upstream", schema: upstream, build: 5,
                admin: "upstreams", endpoint: [name],
                refs: ["name"], unique: [name],
                fks: [client_certificate -> Certificate restrict],
                nests: [Target.upstream as "targets"],
            }
            Target(Target) {
                key: targets, singular: "target", schema: target, build: 6,
                admin: "targets", endpoint: [target],
                refs: [], unique: [],
                fks: [upstream -> Upstream cascade],
                nests: [],
            }
            Consumer(Consumer) {
                key: consumers, singular: "consumer", schema: consumer, build: 7,
                admin: "consumers", endpoint: [username],
                refs: ["username", "custom_id"], unique: [username, custom_id],
                fks: [],
                nests: [
                    Plugin.consumer as "plugins",
                    KeyAuth.consumer as "key-auth",
                    BasicAuth.consumer as "basic-auth",
                    Acl.consumer as "acls",
                    HmacAuth.consumer as "hmac-auth",
                    Jwt.consumer as "jwt",
                    OAuth2.consumer as "oauth2",
                ],
            }
            KeyAuth(KeyAuthCredential) {
                key: keyauth_credentials, singular: "keyauth_credential", schema: keyauth_credential,
                build: 8, admin: "key-auths", endpoint: [key],
                refs: [], unique: [key],
                fks: [consumer -> Consumer cascade],
                nests: [],
            }
            BasicAuth(BasicAuthCredential) {
                key: basicauth_credentials, singular: "basicauth_credential",
                schema: basicauth_credential, build: 9, admin: "basic-auths", endpoint: [username],
                refs: [], unique: [username],
                fks: [consumer -> Consumer cascade],
                nests: [],
            }
            Acl(Acl) {
                key: acls, singular: "acl", schema: acl, build: 10,
                admin: "acls", endpoint: [],
                refs: [], unique: [],
                fks: [consumer -> Consumer cascade],
                nests: [],
            }
            HmacAuth(HmacAuthCredential) {
                key: hmacauth_credentials, singular: "hmacauth_credential",
                schema: hmacauth_credential, build: 11, admin: "hmac-auths", endpoint: [username],
                refs: [], unique: [username],
                fks: [consumer -> Consumer cascade],
                nests: [],
            }
            Jwt(JwtSecret) {
                key: jwt_secrets, singular: "jwt_secret", schema: jwt_secret, build: 12,
                admin: "jwts", endpoint: [key],
                refs: [], unique: [key],
                fks: [consumer -> Consumer cascade],
                nests: [],
            }
            OAuth2(OAuth2Credential) {
                key: oauth2_credentials, singular: "oauth2_credential", schema: oauth2_credential,
                build: 13, admin: "oauth2", endpoint: [client_id],
                refs: [], unique: [client_id],
                fks: [consumer -> Consumer cascade],
                nests: [],
            }
            Plugin(Plugin) {
                key: plugins, singular: "plugin", schema: plugin, build: 14,
                admin: "plugins", endpoint: [instance_name],
                refs: [], unique: [],
                fks: [service -> Service cascade, route -> Route cascade, consumer -> Consumer cascade],
                nests: [],
            }
            Certificate(Certificate) {
                key: certificates, singular: "certificate", schema: certificate, build: 1,
                admin: "certificates", endpoint: [],
                refs: [], unique: [],
                fks: [],
                nests: [Sni.certificate as "snis"],
            }
            Sni(Sni) {
                key: snis, singular: "sni", schema: sni, build: 2,
                admin: "snis", endpoint: [name],
                refs: ["name"], unique: [name],
                fks: [certificate -> Certificate cascade],
                nests: [],
            }
            CaCertificate(CaCertificate) {
                key: ca_certificates, singular: "ca_certificate", schema: ca_certificate, build: 0,
                admin: "ca_certificates", endpoint: [],
                refs: [], unique: [],
                fks: [],
                nests: [],
            }
        }
    };
}

#[cfg(test)]
mod tests;
