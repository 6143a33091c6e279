//! The validated entity types, one struct per Kong entity.
//!
//! These are what every other crate sees: the outside format (Kong's declarative YAML/JSON) is parsed and
//! validated into them by [`crate::declarative`], and they serialize back in the shape Kong's Admin API
//! returns (unset optional fields as `null`, foreign keys as `{"id": ...}`).

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// Reads `null` as an empty list (a certificate's `snis` in validated input, where nesting left it unset).
fn null_as_empty<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    Ok(Option::<Vec<String>>::deserialize(d)?.unwrap_or_default())
}

/// A foreign key, serialized the way Kong does: `{"id": "<uuid>"}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Ref {
    /// The id of the referenced entity.
    pub id: Uuid,
}

/// One entry of a stream route's `sources` or `destinations`: an IP or CIDR range, a port, or both.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CidrPort {
    pub ip: Option<String>,
    pub port: Option<u16>,
}

/// An upstream service: where matched requests are proxied to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Service {
    pub id: Uuid,
    pub name: Option<String>,
    /// `http`, `https`, `grpc`, `grpcs`, `tcp`, `tls`, `udp`, `tls_passthrough`, `ws`, `wss`.
    pub protocol: String,
    /// A hostname, an IP address, or the name of an [`Upstream`].
    pub host: String,
    pub port: u16,
    pub path: Option<String>,
    pub retries: u32,
    /// Milliseconds.
    pub connect_timeout: u64,
    /// Milliseconds.
    pub write_timeout: u64,
    /// Milliseconds.
    pub read_timeout: u64,
    pub tls_verify: Option<bool>,
    pub tls_verify_depth: Option<u32>,
    pub ca_certificates: Option<Vec<Uuid>>,
    pub client_certificate: Option<Ref>,
    pub enabled: bool,
    pub tags: Option<Vec<String>>,
    pub created_at: i64,
    pub updated_at: i64,
}

/// A route: the rules that select a [`Service`] for a request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Route {
    pub id: Uuid,
    pub name: Option<String>,
    /// Lower-case protocol names; `["http", "https"]` by default.
    pub protocols: Vec<String>,
    /// Upper-case method names.
    pub methods: Option<Vec<String>>,
    /// Host names, possibly with a port and one leading or trailing `*` label.
    pub hosts: Option<Vec<String>>,
    /// `/prefix` paths or `~/regex` paths.
    pub paths: Option<Vec<String>>,
    /// Header name (lower-case) to accepted values; values starting with `~*` are regexes.
    pub headers: Option<IndexMap<String, Vec<String>>>,
    pub snis: Option<Vec<String>>,
    /// Stream routes: the client addresses (and ports) that match.
    #[serde(default)]
    pub sources: Option<Vec<CidrPort>>,
    /// Stream routes: the addresses (and ports) the client connected to that match.
    #[serde(default)]
    pub destinations: Option<Vec<CidrPort>>,
    pub strip_path: bool,
    pub preserve_host: bool,
    pub regex_priority: i64,
    /// `v0` or `v1`.
    pub path_handling: String,
    /// 426 (default), 301, 302, 307 or 308.
    pub https_redirect_status_code: u16,
    pub request_buffering: bool,
    pub response_buffering: bool,
    pub service: Option<Ref>,
    pub tags: Option<Vec<String>>,
    pub created_at: i64,
    pub updated_at: i64,
}

/// A virtual hostname that load-balances over its [`Target`]s.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Upstream {
    pub id: Uuid,
    pub name: String,
    /// `round-robin`, `consistent-hashing`, `least-connections` or `latency`.
    pub algorithm: String,
    pub hash_on: String,
    pub hash_fallback: String,
    pub hash_on_header: Option<String>,
    pub hash_fallback_header: Option<String>,
    pub hash_on_cookie: Option<String>,
    pub hash_on_cookie_path: String,
    pub hash_on_query_arg: Option<String>,
    pub hash_fallback_query_arg: Option<String>,
    pub hash_on_uri_capture: Option<String>,
    pub hash_fallback_uri_capture: Option<String>,
    pub slots: u32,
    pub host_header: Option<String>,
    /// The client certificate Kong presents to the targets (accepted and exported; Sluice does not use
    /// it yet: the service's `client_certificate` applies).
    #[serde(default)]
    pub client_certificate: Option<Ref>,
    pub healthchecks: Healthchecks,
    pub use_srv_name: bool,
    pub tags: Option<Vec<String>>,
    pub created_at: i64,
    pub updated_at: i64,
}

/// Kong's `healthchecks` record of an upstream; every number 0 disables that check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Healthchecks {
    pub active: ActiveHealthcheck,
    pub passive: PassiveHealthcheck,
    #[serde(serialize_with = "whole::f64")]
    pub threshold: f64,
}

/// Probes sent by the gateway in the background.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ActiveHealthcheck {
    /// `http`, `https`, `tcp`, `grpc`, `grpcs`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Seconds.
    #[serde(serialize_with = "whole::f64")]
    pub timeout: f64,
    pub concurrency: u32,
    pub http_path: String,
    pub https_verify_certificate: bool,
    pub https_sni: Option<String>,
    pub headers: Option<IndexMap<String, Vec<String>>>,
    pub healthy: HealthyRule,
    pub unhealthy: UnhealthyRule,
}

/// Health learned from proxied traffic.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PassiveHealthcheck {
    #[serde(rename = "type")]
    pub kind: String,
    pub healthy: HealthyRule,
    pub unhealthy: UnhealthyRule,
}

/// When a target counts as healthy again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HealthyRule {
    /// Seconds between active probes of healthy targets (0 = off). Absent for passive checks.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "whole::opt_f64"
    )]
    pub interval: Option<f64>,
    pub http_statuses: Vec<u16>,
    pub successes: u32,
}

/// When a target counts as unhealthy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UnhealthyRule {
    /// Seconds between active probes of unhealthy targets (0 = off). Absent for passive checks.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "whole::opt_f64"
    )]
    pub interval: Option<f64>,
    pub http_statuses: Vec<u16>,
    pub tcp_failures: u32,
    pub timeouts: u32,
    pub http_failures: u32,
}

/// One backend address of an [`Upstream`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Target {
    pub id: Uuid,
    pub upstream: Ref,
    /// Normalized `host:port` (`[v6]:port` for IPv6); the port defaults to 8000.
    pub target: String,
    pub weight: u32,
    pub tags: Option<Vec<String>>,
    #[serde(serialize_with = "whole::f64")]
    pub created_at: f64,
    #[serde(serialize_with = "whole::f64")]
    pub updated_at: f64,
}

/// A client of the API, identified by authentication plugins.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Consumer {
    pub id: Uuid,
    pub username: Option<String>,
    pub custom_id: Option<String>,
    pub tags: Option<Vec<String>>,
    pub created_at: i64,
    pub updated_at: i64,
}

/// A key-auth API key (`keyauth_credentials`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KeyAuthCredential {
    pub id: Uuid,
    pub consumer: Ref,
    pub key: String,
    pub ttl: Option<u64>,
    pub tags: Option<Vec<String>>,
    pub created_at: i64,
}

/// A basic-auth credential (`basicauth_credentials`). `password` always holds the hash, never the plain text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BasicAuthCredential {
    pub id: Uuid,
    pub consumer: Ref,
    pub username: String,
    /// SHA-1 hex of `password .. consumer_id`, as Kong stores it.
    pub password: String,
    pub tags: Option<Vec<String>>,
    pub created_at: i64,
}

/// An hmac-auth credential (`hmacauth_credentials`): the username a client signs with and the shared secret.
/// A credential without `secret` gets a random one when it is loaded or created, as Kong generates it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HmacAuthCredential {
    pub id: Uuid,
    pub consumer: Ref,
    pub username: String,
    pub secret: String,
    pub tags: Option<Vec<String>>,
    pub created_at: i64,
}

/// Membership of a consumer in an ACL group (`acls`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Acl {
    pub id: Uuid,
    pub consumer: Ref,
    pub group: String,
    pub tags: Option<Vec<String>>,
    pub created_at: i64,
}

/// A jwt plugin credential (`jwt_secrets`): `key` is what a token names in its `iss` (or configured) claim;
/// `secret` signs HS* tokens, `rsa_public_key` (any PEM public key, despite the name) verifies the others.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JwtSecret {
    pub id: Uuid,
    pub consumer: Ref,
    pub key: String,
    pub secret: String,
    pub rsa_public_key: Option<String>,
    /// One of Kong's list (`HS256` by default), checked by the schema.
    pub algorithm: String,
    pub tags: Option<Vec<String>>,
    pub created_at: i64,
}

/// An OAuth 2.0 application of a consumer (`oauth2_credentials`), for the oauth2 plugin: `client_id` names
/// it (generated when left out), `client_secret` authenticates a confidential client (generated when left
/// out; stored as a PBKDF2 hash when `hash_secret` is true, see [`crate::oauth2_secret`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OAuth2Credential {
    pub id: Uuid,
    pub consumer: Ref,
    pub name: String,
    pub client_id: String,
    pub client_secret: String,
    pub hash_secret: bool,
    /// Where the authorization endpoint may send the client back (absolute URIs without fragment).
    pub redirect_uris: Option<Vec<String>>,
    /// `confidential` (authenticates with its secret) or `public` (PKCE instead).
    pub client_type: String,
    pub tags: Option<Vec<String>>,
    pub created_at: i64,
}

/// A plugin instance, global or scoped to any of service, route and consumer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plugin {
    pub id: Uuid,
    pub name: String,
    pub instance_name: Option<String>,
    /// The config with the plugin schema's defaults filled in.
    pub config: serde_json::Value,
    pub service: Option<Ref>,
    pub route: Option<Ref>,
    pub consumer: Option<Ref>,
    pub enabled: bool,
    pub protocols: Vec<String>,
    pub tags: Option<Vec<String>>,
    pub created_at: i64,
    pub updated_at: i64,
}

/// A TLS certificate with its key, and an optional second (alternate-algorithm) pair.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Certificate {
    pub id: Uuid,
    pub cert: String,
    pub key: String,
    pub cert_alt: Option<String>,
    pub key_alt: Option<String>,
    /// Names of the SNIs attached to this certificate (Kong returns them inline; filled from [`Config::snis`]).
    #[serde(default, deserialize_with = "null_as_empty")]
    pub snis: Vec<String>,
    pub tags: Option<Vec<String>>,
    pub created_at: i64,
    pub updated_at: i64,
}

/// A server name that selects a [`Certificate`]; may be a `*.example.com` or `example.*` wildcard.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sni {
    pub id: Uuid,
    pub name: String,
    pub certificate: Ref,
    pub tags: Option<Vec<String>>,
    pub created_at: i64,
    pub updated_at: i64,
}

/// A trusted CA certificate, referenced by services' `ca_certificates`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaCertificate {
    pub id: Uuid,
    pub cert: String,
    pub cert_digest: Option<String>,
    pub tags: Option<Vec<String>>,
    pub created_at: i64,
    pub updated_at: i64,
}

macro_rules! config_struct {
    ([] $( $variant:ident ($ty:ident) { key: $key:ident, $($rest:tt)* } )*) => {
        /// A whole validated configuration: one list per entity kind of [`crate::kind_table`]. Vectors keep
        /// the file's order, which is also the creation order that breaks routing ties.
        #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
        pub struct Config {
            #[serde(rename = "_format_version")]
            pub format_version: String,
            /// Hash of the validated input (32 hex chars), computed before load-time timestamps are filled
            /// in, so the same file always gives the same hash (Kong's `configuration_hash`, `check_hash`).
            #[serde(skip)]
            pub hash: String,
            $(pub $key: Vec<$ty>,)*
        }
    };
}

crate::entity_kinds!(config_struct);

/// Calls `$each(key, &config.<list>, $f)` for every entity list of a [`Config`], in table order (the flat
/// export's), so each way of walking a config names the lists once: in [`crate::kind_table`].
macro_rules! each_entity_list {
    ($config:expr, $each:ident, $f:expr) => {
        crate::entity_kinds!(crate::entities::each_entity_list_rows; $config, $each, $f)
    };
}

macro_rules! each_entity_list_rows {
    ([$config:expr, $each:ident, $f:expr] $( $variant:ident ($ty:ident) { key: $key:ident, $($rest:tt)* } )*) => {{
        $( $each(stringify!($key), &$config.$key, $f); )*
    }};
}
pub(crate) use each_entity_list;
pub(crate) use each_entity_list_rows;

/// Numbers Kong keeps as Lua numbers (float or integer alike) serialize as integers when whole, as Kong's
/// JSON encoder writes them: `1`, not `1.0`.
mod whole {
    use serde::Serializer;

    pub fn f64<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
        if v.fract() == 0.0 && v.abs() < 9.0e15 {
            s.serialize_i64(*v as i64)
        } else {
            s.serialize_f64(*v)
        }
    }

    pub fn opt_f64<S: Serializer>(v: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(v) => f64(v, s),
            None => s.serialize_none(),
        }
    }
}
