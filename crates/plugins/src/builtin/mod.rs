//! The plugins of this build, one file each. Adding a plugin = one file + one line in [`all`].

use crate::registry::Builtin;

pub mod acl;
mod auth;
pub mod basic_auth;
pub mod bot_detection;
pub mod correlation_id;
pub mod cors;
pub mod datadog;
pub mod file_log;
pub mod grpc_gateway;
mod grpc_proto;
pub mod grpc_web;
pub mod hmac_auth;
pub mod http_log;
pub mod ip_restriction;
pub mod jwt;
pub mod key_auth;
pub mod ldap_auth;
pub mod loggly;
pub mod oauth2;
pub mod opentelemetry;
pub mod prometheus;
pub mod proxy_cache;
pub mod rate_limiting;
pub mod redirect;
pub mod request_size_limiting;
pub mod request_termination;
pub mod request_transformer;
pub mod response_ratelimiting;
pub mod response_transformer;
pub mod session;
pub mod statsd;
mod statsd_lines;
pub mod syslog;
pub mod tcp_log;
mod transform;
pub mod udp_log;
pub mod zipkin;

/// Every plugin this build implements.
pub fn all() -> Vec<Builtin> {
    all_for(false)
}

/// Every plugin, for a node with a database (`database`: DB-mode-only options such as rate-limiting's
/// `policy: cluster` are accepted) or without one.
pub fn all_for(database: bool) -> Vec<Builtin> {
    vec![
        correlation_id::builtin(),
        bot_detection::builtin(),
        cors::builtin(),
        jwt::builtin(),
        oauth2::builtin(database),
        key_auth::builtin(),
        ldap_auth::builtin(),
        basic_auth::builtin(),
        session::builtin(),
        hmac_auth::builtin(),
        grpc_gateway::builtin(),
        ip_restriction::builtin(),
        acl::builtin(),
        rate_limiting::builtin(database),
        response_ratelimiting::builtin(database),
        request_size_limiting::builtin(),
        request_transformer::builtin(),
        response_transformer::builtin(),
        redirect::builtin(),
        request_termination::builtin(),
        grpc_web::builtin(),
        prometheus::builtin(),
        proxy_cache::builtin(),
        http_log::builtin(),
        file_log::builtin(),
        udp_log::builtin(),
        tcp_log::builtin(),
        loggly::builtin(),
        syslog::builtin(),
        opentelemetry::builtin(),
        zipkin::builtin(),
        statsd::builtin(),
        datadog::builtin(),
    ]
}
