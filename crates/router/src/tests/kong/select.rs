//! The spec's `select()` block: its shared table of fifteen routes with the "[host]" … "[serviceless]"
//! cases, "misses", and "edge-cases" → "root / [uri]" and "multiple routes of same category".

use super::*;

const LOC12: &[&str] = &["my-location-1", "my-location-2"];
const HOSTS12: &[&str] = &["domain-1.org", "domain-2.org"];
const PPP: &[&str] = &["POST", "PUT", "PATCH"];

/// The shared table, route `n` at spec position `n`.
fn table() -> Vec<RouteSpec> {
    vec![
        r(1, &[("hosts", HOSTS12)]),
        r(2, &[("methods", &["TRACE"])]),
        r(3, &[("paths", &["/my-route"])]),
        r(4, &[("paths", &["/route-4"]), ("hosts", HOSTS12)]),
        r(5, &[("hosts", HOSTS12), ("methods", PPP)]),
        r(6, &[("methods", PPP), ("paths", &["/route-6"])]),
        r(
            7,
            &[
                ("hosts", &["domain-with-uri-1.org", "domain-with-uri-2.org"]),
                ("methods", PPP),
                ("paths", &["/my-route-uri"]),
            ],
        ),
        r(8, &[("paths", &["/serviceless"])]),
        r(9, &[("h:location", LOC12)]),
        r(
            10,
            &[
                ("h:location", &["my-location-1"]),
                ("h:version", &["v1", "v2"]),
            ],
        ),
        r(11, &[("h:location", LOC12), ("paths", &["/headers-uri"])]),
        r(
            12,
            &[
                (
                    "hosts",
                    &["domain-with-headers-1.org", "domain-with-headers-2.org"],
                ),
                ("h:location", LOC12),
                ("methods", PPP),
                ("paths", &["/headers-host-uri-method"]),
            ],
        ),
        r(13, &[("hosts", &["domain-1.org:321", "domain-2.org"])]),
        r(14, &[("hosts", &["domain-3.org:321"])]),
        r(
            15,
            &[(
                "h:user_agent",
                &["~*windows|linux|os\\s+x\\s*[\\d\\._]+|solaris|bsd"],
            )],
        ),
    ]
}

const CHROME: &str = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) \
                      Chrome/83.0.4103.116 Safari/537.36";

#[test]
fn shared_table() {
    check(
        table(),
        &[
            // [host]; [host] ignores default port; matches specific port (1 and 13 tie: larger id)
            get("domain-1.org", "/", Some(1)),
            get("domain-1.org:80", "/", Some(1)),
            get("domain-1.org:321", "/", Some(13)),
            // matches specific port on port-only route; fails just because of port on port-only route
            get("domain-3.org:321", "/", Some(14)),
            get("domain-3.org:123", "/", None),
            // [uri]; [uri + empty host]; [method]
            get("domain.org", "/my-route", Some(3)),
            get("", "/my-route-uri", Some(3)),
            req("TRACE", "domain.org", "/", Some(2)),
            // [host + uri]; [host + method]; [uri + method]; [host + uri + method]
            get("domain-1.org", "/route-4", Some(4)),
            req("POST", "domain-1.org", "/", Some(5)),
            req("PUT", "domain.org", "/route-6", Some(6)),
            req("PUT", "domain-with-uri-2.org", "/my-route-uri", Some(7)),
            // single [headers] value
            with_headers(&[("location", "my-location-1")], Some(9)),
            with_headers(&[("location", "my-location-2")], Some(9)),
            with_headers(
                &[("location", "my-location-3"), ("location", "my-location-2")],
                Some(9),
            ),
            with_headers(&[("location", "my-location-3")], None),
            with_headers(&[("location", "my-location-3"), ("location", "foo")], None),
            with_headers(&[("user-agent", CHROME)], Some(15)),
            // multiple [headers] values (the last falls back to route 9)
            with_headers(
                &[("location", "my-location-1"), ("version", "v1")],
                Some(10),
            ),
            with_headers(
                &[("location", "my-location-1"), ("version", "v2")],
                Some(10),
            ),
            with_headers(
                &[
                    ("location", "my-location-3"),
                    ("location", "my-location-1"),
                    ("version", "v2"),
                ],
                Some(10),
            ),
            with_headers(
                &[
                    ("location", "my-location-3"),
                    ("location", "my-location-2"),
                    ("version", "v2"),
                ],
                Some(9),
            ),
            // [headers + uri]; [host + headers + uri + method]; [serviceless]
            Req {
                headers: &[("location", "my-location-2")],
                ..get("", "/headers-uri", Some(11))
            },
            Req {
                headers: &[("location", "my-location-2")],
                ..req(
                    "PUT",
                    "domain-with-headers-1.org",
                    "/headers-host-uri-method",
                    Some(12),
                )
            },
            get("", "/serviceless", Some(8)),
            // [uri prefix] matches when given [uri] is in request URI prefix
            get("domain.org", "/my-route/some/path", Some(3)),
        ],
    );
}

#[test]
fn misses() {
    let loc = &[("location", "invalid-location")];
    check(
        table(),
        &[
            get("domain-3.org", "/", None),
            get("domain-3.org", "/route-4", None),
            get("domain-with-uri-2.org", "/some-uri", None),
            req("PUT", "domain-with-uri-2.org", "/some-uri-foo", None),
            get("domain.org", "/some-other-prefix/my-route", None),
            with_headers(loc, None),
            Req {
                headers: loc,
                ..get("", "/headers-uri", None)
            },
            Req {
                headers: loc,
                ..req("PUT", "", "/headers-uri-method", None)
            },
            Req {
                headers: loc,
                ..req(
                    "PUT",
                    "domain-with-headers-1.org",
                    "/headers-host-uri-method",
                    None,
                )
            },
        ],
    );
}

/// "root / [uri]": a `/` route (id `…810f`) inserted first in the table.
#[test]
fn root_uri_is_a_catch_all() {
    let mut routes = table();
    routes.insert(
        0,
        RouteSpec {
            uuid: kong_id(0) + 0xf,
            ..r(0, &[("paths", &["/"])])
        },
    );
    check(
        routes,
        &[
            // request with [method]; does not supersede another route; acts as a catch-all route
            get("domain.org", "/", Some(0)),
            get("domain.org", "/my-route", Some(3)),
            get("domain.org", "/my-route/hello/world", Some(3)),
            get("domain.org", "/foobar/baz", Some(0)),
        ],
    );
}

/// "multiple routes of same category with conflicting values": five `[host + uri]` routes on `/my-uri`
/// (ids `…8111`…`…8115`) and one on `/my-target-uri` (`…8121`).
#[test]
fn same_category_conflicting_values() {
    let mut routes = table();
    for i in 1..=5 {
        let same = r(
            110 + i,
            &[("hosts", &["domain.org"]), ("paths", &["/my-uri"])],
        );
        // The spec reuses the ids of table routes 11 to 15 here.
        routes.push(RouteSpec {
            uuid: kong_id(10 + i as u128),
            ..same
        });
    }
    let target = r(
        121,
        &[("hosts", &["domain.org"]), ("paths", &["/my-target-uri"])],
    );
    routes.push(RouteSpec {
        uuid: kong_id(21),
        ..target
    });
    check(routes, &[get("domain.org", "/my-target-uri", Some(121))]);
}
