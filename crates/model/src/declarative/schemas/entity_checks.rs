//! Kong's `entity_checks` of services and upstreams (`kong/db/schema/entities/{services,upstreams}.lua`
//! at 3.9.1), declared as [`EntityCheck`]s.

use crate::schema::{EntityCheck, Then, When};

/// Kong's `entity_checks` of `services` (`kong/db/schema/entities/services.lua`): no `path` on a
/// stream or grpc service, no TLS settings on one that does not speak TLS upstream.
pub(super) fn services() -> Vec<EntityCheck> {
    let null_unless_tls = |then_field| EntityCheck::Conditional {
        if_field: "protocol",
        when: When::NotOneOf(&["https", "tls"]),
        then_field,
        then: Then::Null,
        then_err: None,
    };
    vec![
        EntityCheck::Conditional {
            if_field: "protocol",
            when: When::OneOf(&["tcp", "tls", "udp", "grpc", "grpcs"]),
            then_field: "path",
            then: Then::Null,
            then_err: None,
        },
        null_unless_tls("client_certificate"),
        null_unless_tls("tls_verify"),
        null_unless_tls("tls_verify_depth"),
        null_unless_tls("ca_certificates"),
    ]
}

/// Kong's `entity_checks` of `upstreams` (`kong/db/schema/entities/upstreams.lua`): what each `hash_on`
/// and `hash_fallback` needs, and which fallbacks each `hash_on` allows.
pub(super) fn upstreams() -> Vec<EntityCheck> {
    let needs = |if_field, value, then_field| EntityCheck::Conditional {
        if_field,
        when: When::Is(value),
        then_field,
        then: Then::Required,
        then_err: None,
    };
    let fallbacks = |value, allowed| EntityCheck::Conditional {
        if_field: "hash_on",
        when: When::Is(value),
        then_field: "hash_fallback",
        then: Then::OneOf(allowed),
        then_err: None,
    };
    vec![
        needs("hash_on", "header", "hash_on_header"),
        needs("hash_fallback", "header", "hash_fallback_header"),
        needs("hash_on", "cookie", "hash_on_cookie"),
        needs("hash_fallback", "cookie", "hash_on_cookie"),
        fallbacks("none", &["none"]),
        fallbacks("cookie", &["none"]),
        fallbacks(
            "consumer",
            &[
                "none",
                "ip",
                "header",
                "cookie",
                "path",
                "query_arg",
                "uri_capture",
            ],
        ),
        fallbacks(
            "ip",
            &[
                "none",
                "consumer",
                "header",
                "cookie",
                "path",
                "query_arg",
                "uri_capture",
            ],
        ),
        fallbacks(
            "path",
            &[
                "none",
                "consumer",
                "header",
                "cookie",
                "query_arg",
                "ip",
                "uri_capture",
            ],
        ),
        EntityCheck::Distinct(&["hash_on_header", "hash_fallback_header"]),
        needs("hash_on", "query_arg", "hash_on_query_arg"),
        needs("hash_fallback", "query_arg", "hash_fallback_query_arg"),
        EntityCheck::Distinct(&["hash_on_query_arg", "hash_fallback_query_arg"]),
        needs("hash_on", "uri_capture", "hash_on_uri_capture"),
        needs("hash_fallback", "uri_capture", "hash_fallback_uri_capture"),
        EntityCheck::Distinct(&["hash_on_uri_capture", "hash_fallback_uri_capture"]),
    ]
}

#[cfg(test)]
mod tests;
