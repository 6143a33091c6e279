//! The spec's precedence cases between fields: "[wildcard host]", "[wildcard host] + [uri regex]",
//! "[headers]" ordering and "edge-cases".

use super::*;

fn wild() -> Vec<RouteSpec> {
    vec![
        r(1, &[("hosts", &["*.route.com"])]),
        r(2, &[("hosts", &["route.*"])]),
    ]
}

#[test]
fn wildcard_host() {
    // leftmost, rightmost, any port in request
    check(
        wild(),
        &[
            get("foo.route.com", "/", Some(1)),
            get("route.org", "/", Some(2)),
            get("route.org:123", "/", Some(2)),
            get("foo.route.com:123", "/", Some(1)),
        ],
    );
    // matches port-specific routes
    let mut routes = wild();
    routes.push(r(3, &[("hosts", &["*.route.net:123"])]));
    routes.push(r(4, &[("hosts", &["route.*:123"])]));
    check(
        routes,
        &[
            get("foo.route.net:123", "/", Some(3)),
            get("foo.route.net:456", "/", None),
            get("route.org:123", "/", Some(4)),
        ],
    );
    // prefers port-specific even for the http and https default ports (implicit: the listening port)
    for port in [80, 443] {
        let mut routes = wild();
        let host: &'static str = if port == 80 {
            "route.*:80"
        } else {
            "route.*:443"
        };
        routes.push(r(3, &[("hosts", &[host])]));
        let explicit: &'static str = if port == 80 {
            "route.org:80"
        } else {
            "route.org:443"
        };
        check(
            routes,
            &[
                get("route.org:123", "/", Some(2)),
                get(explicit, "/", Some(3)),
                at_port("route.org", port, Some(3)),
            ],
        );
    }
    // does not take precedence over a plain host
    let mut routes = wild();
    routes.insert(0, r(3, &[("hosts", &["plain.route.com"])]));
    routes.push(r(4, &[("hosts", &["route.com"])]));
    check(
        routes,
        &[
            get("route.com", "/", Some(4)),
            get("route.org", "/", Some(2)),
            get("plain.route.com", "/", Some(3)),
            get("foo.route.com", "/", Some(1)),
        ],
    );
    // [wildcard host + path] vs a similar [plain host], both ways
    let pair = || {
        vec![
            r(1, &[("hosts", &["*.route.com"]), ("paths", &["/path1"])]),
            r(
                2,
                &[("hosts", &["plain.route.com"]), ("paths", &["/path2"])],
            ),
        ]
    };
    check(
        pair(),
        &[
            get("plain.route.com", "/path1", Some(1)),
            get("plain.route.com", "/path2", Some(2)),
        ],
    );
    // submatch_weight [wildcard host port] > [wildcard host]
    check(
        vec![
            r(1, &[("hosts", &["route.*"])]),
            r(2, &[("hosts", &["route.*:80", "route.com.*"])]),
        ],
        &[get("route.org:80", "/", Some(2))],
    );
    // matches a [wildcard host + port] even if a [wildcard host] matched
    check(
        vec![
            r(1, &[("hosts", &["route.*"])]),
            r(2, &[("hosts", &["route.*:123"])]),
            r(3, &[("hosts", &["route.*:80"])]),
        ],
        &[
            get("route.org:123", "/", Some(2)),
            at_port("route.org", 80, Some(3)),
        ],
    );
    // matches [wildcard/plain + uri + method]
    let mut routes = wild();
    routes.push(RouteSpec {
        id: 3,
        ..r(
            1,
            &[
                ("hosts", &["*.domain.com", "example.com"]),
                ("paths", &["/path"]),
                ("methods", &["GET", "TRACE"]),
            ],
        )
    });
    check(
        routes,
        &[
            req("POST", "foo.domain.com", "/path", None),
            get("foo.domain.com", "/path", Some(3)),
            req("TRACE", "example.com", "/path", Some(3)),
        ],
    );
    // [wildcard host] + [uri regex]
    check(
        vec![
            r(
                1,
                &[
                    ("hosts", &["*.example.com"]),
                    ("paths", &["~/users/\\d+/profile"]),
                ],
            ),
            r(2, &[("hosts", &["*.example.com"]), ("paths", &["/users"])]),
        ],
        &[
            get("test.example.com", "/users/123/profile", Some(1)),
            get("test.example.com", "/users", Some(2)),
        ],
    );
}

#[test]
fn more_headers_first() {
    // evaluates Routes with more [headers] first
    check(
        vec![
            r(
                1,
                &[
                    ("h:version", &["v1", "v2"]),
                    ("h:user_agent", &["foo", "bar"]),
                ],
            ),
            r(
                2,
                &[
                    ("h:version", &["v1", "v2"]),
                    ("h:user_agent", &["foo", "bar"]),
                    ("h:location", &["east", "west"]),
                ],
            ),
        ],
        &[with_headers(
            &[
                ("version", "v1"),
                ("user-agent", "foo"),
                ("location", "north"),
                ("location", "west"),
            ],
            Some(2),
        )],
    );
    // more [headers] has priority over longer [paths] (the second select passes "http" as the host)
    let loc = &[("version", "v1"), ("location", "us-east")];
    check(
        vec![
            r(
                1,
                &[("h:version", &["v1"]), ("paths", &["/my-route/hello"])],
            ),
            r(
                2,
                &[
                    ("h:version", &["v1"]),
                    ("h:location", &["us-east"]),
                    ("paths", &["/my-route"]),
                ],
            ),
        ],
        &[
            Req {
                headers: loc,
                ..get("domain.org", "/my-route/hello", Some(2))
            },
            Req {
                headers: loc,
                ..get("http", "/my-route/hello/world", Some(2))
            },
        ],
    );
}

#[test]
fn edge_cases() {
    // [host] and [uri] have higher priority than [method] (routes 1-7 of the shared table)
    let hosts: &[&str] = &["domain-1.org", "domain-2.org"];
    let ppp: &[&str] = &["POST", "PUT", "PATCH"];
    check(
        vec![
            r(1, &[("hosts", hosts)]),
            r(2, &[("methods", &["TRACE"])]),
            r(3, &[("paths", &["/my-route"])]),
            r(4, &[("paths", &["/route-4"]), ("hosts", hosts)]),
            r(5, &[("hosts", hosts), ("methods", ppp)]),
            r(6, &[("methods", ppp), ("paths", &["/route-6"])]),
            r(
                7,
                &[
                    ("hosts", &["domain-with-uri-1.org"]),
                    ("methods", ppp),
                    ("paths", &["/my-route-uri"]),
                ],
            ),
        ],
        &[
            req("TRACE", "domain-2.org", "/", Some(1)),
            req("TRACE", "domain.org", "/my-route", Some(3)),
        ],
    );
    // half [uri] and [host] match does not supersede another route
    check(
        vec![
            r(1, &[("hosts", &["host1.com"]), ("paths", &["/v1/path"])]),
            r(2, &[("hosts", &["host2.com"]), ("paths", &["/"])]),
        ],
        &[
            get("host1.com", "/v1/path", Some(1)),
            get("host2.com", "/v1/path", Some(2)),
        ],
    );
    // half [wildcard host] and [method] match does not supersede another route
    check(
        vec![
            r(1, &[("hosts", &["host.*"]), ("methods", &["GET"])]),
            r(2, &[("hosts", &["host.*"]), ("methods", &["POST"])]),
        ],
        &[
            get("host.com", "/", Some(1)),
            req("POST", "host.com", "/", Some(2)),
        ],
    );
    // half [uri regex] and [method] match does not supersede another route
    check(
        vec![
            r(
                1,
                &[("methods", &["GET"]), ("paths", &["~/users/\\d+/profile"])],
            ),
            r(
                2,
                &[("methods", &["POST"]), ("paths", &["~/users/\\d*/profile"])],
            ),
        ],
        &[
            get("d.org", "/users/123/profile", Some(1)),
            req("POST", "d.org", "/users/123/profile", Some(2)),
        ],
    );
    // [method] does not supersede [uri prefix]
    check(
        vec![
            r(1, &[("methods", &["GET"])]),
            r(2, &[("paths", &["/example"])]),
        ],
        &[
            get("d.org", "/example", Some(2)),
            get("d.org", "/example/status/200", Some(2)),
        ],
    );
    // [method] does not supersede [wildcard host]: equal priority, the larger id wins; swapping the ids
    // swaps the winner
    let pair = || {
        vec![
            r(1, &[("methods", &["GET"])]),
            r(2, &[("hosts", &["domain.*"])]),
        ]
    };
    check(
        pair(),
        &[
            get("nothing.com", "/", Some(1)),
            get("domain.com", "/", Some(2)),
        ],
    );
    let mut swapped = pair();
    swapped[0].uuid = kong_id(2);
    swapped[1].uuid = kong_id(1);
    check(swapped, &[get("domain.com", "/", Some(1))]);
    // does not supersede another route with a longer [uri prefix] (trad-only in the spec; Kong's split
    // ranks each length on its own, so it holds here too)
    check(
        vec![
            r(1, &[("paths", &["/a", "/bbbbbbb"])]),
            r(2, &[("paths", &["/a/bb"])]),
        ],
        &[
            get("d.org", "/a/bb/foobar", Some(2)),
            get("d.org", "/a", Some(1)),
            get("d.org", "/bbbbbbb/x", Some(1)),
        ],
    );
}
