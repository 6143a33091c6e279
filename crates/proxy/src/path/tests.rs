//! Unit tests of `path`.

use super::*;

/// (service path, route prefix, strip_path, handling, request path, expected upstream path), from the
/// behaviour Kong's router specs describe. Handling "*" means v0 and v1 agree.
type Row = (
    &'static str,
    Option<&'static str>,
    bool,
    &'static str,
    &'static str,
    &'static str,
);

const TABLE: &[Row] = &[
    ("/", Some("/"), false, "*", "/", "/"),
    ("/", Some("/"), true, "*", "/route/req", "/route/req"),
    ("/", Some("/"), true, "*", "/route/", "/route/"),
    ("/", Some("/route"), false, "*", "/routereq", "/routereq"),
    ("/", Some("/route"), true, "*", "/route", "/"),
    ("/", Some("/route"), true, "*", "/route/", "/"),
    ("/", Some("/route"), true, "*", "/routereq", "/req"),
    ("/", Some("/route/"), true, "*", "/route/req", "/req"),
    ("/srv", Some("/rou"), false, "v0", "/roureq", "/srv/roureq"),
    ("/srv", Some("/rou"), false, "v1", "/roureq", "/srvroureq"),
    ("/srv", Some("/rou"), true, "v0", "/roureq", "/srv/req"),
    ("/srv", Some("/rou"), true, "v1", "/roureq", "/srvreq"),
    ("/srv/", Some("/rou"), false, "*", "/rou", "/srv/rou"),
    ("/srv/", Some("/rou"), true, "v0", "/rou", "/srv"),
    ("/srv/", Some("/rou"), true, "v1", "/rou", "/srv/"),
    ("/service", Some("/"), true, "*", "/", "/service"),
    (
        "/service",
        Some("/"),
        false,
        "v0",
        "/route/",
        "/service/route/",
    ),
    (
        "/service",
        Some("/"),
        true,
        "v1",
        "/route/",
        "/serviceroute/",
    ),
    (
        "/service",
        Some("/route"),
        false,
        "v0",
        "/route",
        "/service/route",
    ),
    (
        "/service",
        Some("/route"),
        false,
        "v1",
        "/route",
        "/serviceroute",
    ),
    ("/service", Some("/route"), true, "*", "/route", "/service"),
    (
        "/service",
        Some("/route"),
        true,
        "*",
        "/route/",
        "/service/",
    ),
    (
        "/service",
        Some("/route/"),
        true,
        "v0",
        "/route/",
        "/service/",
    ),
    (
        "/service",
        Some("/route/"),
        true,
        "v1",
        "/route/",
        "/service",
    ),
    (
        "/service",
        Some("/route/"),
        true,
        "v1",
        "/route/req",
        "/servicereq",
    ),
    ("/service/", Some("/"), true, "*", "/", "/service/"),
    (
        "/service/",
        Some("/"),
        false,
        "*",
        "/route/req",
        "/service/route/req",
    ),
    (
        "/service/",
        Some("/route"),
        true,
        "v0",
        "/route",
        "/service",
    ),
    (
        "/service/",
        Some("/route"),
        true,
        "v1",
        "/route",
        "/service/",
    ),
    (
        "/service/",
        Some("/route"),
        true,
        "*",
        "/route/",
        "/service/",
    ),
    (
        "/service/",
        Some("/route/"),
        true,
        "*",
        "/route/req",
        "/service/req",
    ),
    // Routes without paths (matched on host): the whole path is the rest.
    ("/", None, true, "*", "/route/", "/route/"),
    ("/service", None, true, "*", "/", "/service"),
    ("/service", None, false, "v0", "/route", "/service/route"),
    ("/service", None, true, "v0", "/route/", "/service/route/"),
    ("/service", None, true, "v1", "/route", "/serviceroute"),
    ("/service/", None, true, "*", "/", "/service/"),
    ("/service/", None, false, "*", "/route", "/service/route"),
    // Dot segments left after stripping, raw or percent-encoded.
    (
        "/service",
        Some("/route"),
        true,
        "v0",
        "/route./req",
        "/service/req",
    ),
    (
        "/service",
        Some("/route"),
        true,
        "v1",
        "/route./req",
        "/servicereq",
    ),
    (
        "/service/",
        Some("/route"),
        true,
        "*",
        "/route%2E/req",
        "/service/req",
    ),
    (
        "/service",
        Some("/route"),
        true,
        "v0",
        "/route%2e%2E/req",
        "/service/req",
    ),
    (
        "/service",
        Some("/route"),
        true,
        "v0",
        "/route../req",
        "/service/req",
    ),
    (
        "/service",
        Some("/route"),
        false,
        "v0",
        "/route%2e/req",
        "/service/route./req",
    ),
    (
        "/service",
        Some("/route"),
        false,
        "v1",
        "/route../req",
        "/serviceroute../req",
    ),
];

#[test]
fn joins_like_kong() {
    for (svc, route, strip, handling, request, want) in TABLE {
        let normalized = normalize(request);
        for v1 in [false, true] {
            if (*handling == "v0" && v1) || (*handling == "v1" && !v1) {
                continue;
            }
            let strip_len = strip.then(|| route.map_or(0, str::len));
            let got = upstream_path(Some(svc), &normalized, strip_len, v1);
            assert_eq!(
                got, *want,
                "service {svc} route {route:?} strip {strip} v1 {v1} request {request}"
            );
        }
    }
}

#[test]
fn no_service_path_means_root() {
    assert_eq!(upstream_path(None, "/api/items", Some(4), false), "/items");
    assert_eq!(upstream_path(None, "/api", Some(4), false), "/");
    assert_eq!(upstream_path(None, "/api/items", None, false), "/api/items");
}

#[test]
fn normalizes_like_kong() {
    let cases = [
        ("/plain/path", "/plain/path"),
        ("/a/./b/../c", "/a/c"),
        ("/a//b///c", "/a/b/c"),
        ("/%61%62c", "/abc"),
        ("/a%2fb", "/a%2Fb"),
        ("/a%20b", "/a b"),
        ("/caf%C3%a9", "/caf%C3%A9"),
        ("/../../x", "/x"),
        ("/a/..", "/"),
        ("/%zz", "/%zz"),
        ("/trailing%", "/trailing%"),
    ];
    for (raw, want) in cases {
        assert_eq!(normalize(raw), want, "{raw}");
    }
    assert!(matches!(normalize("/fast/path"), Cow::Borrowed(_)));
}

#[test]
fn escapes_what_the_upstream_must_not_see_raw() {
    assert_eq!(escape("/a b\"<>"), "/a%20b%22%3C%3E");
    assert_eq!(escape("/keep/%2F:@!$&'()*+,;="), "/keep/%2F:@!$&'()*+,;=");
    assert!(matches!(escape("/x"), Cow::Borrowed(_)));
}

/// The table lets through exactly letters, digits and Kong's reserved and unreserved punctuation.
#[test]
fn the_escape_table_is_kongs_set() {
    for b in 0..=255u8 {
        let kong = b.is_ascii_alphanumeric() || b"!#$&'()*+,/:;=?@[]-_.~%".contains(&b);
        assert_eq!(super::allowed(b), kong, "byte {b}");
    }
}
