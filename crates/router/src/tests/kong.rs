//! Cases from Kong's router unit spec (`spec/01-unit/08-router_spec.lua`, flavor `traditional_compatible`),
//! written as tables: the routes Kong's case builds (with the ids it gives them, since ids break ties) and
//! what each request must select. `docs/router-cases.md` maps every spec case to a test here or to the
//! reason it does not apply.

use super::super::*;
use http::HeaderMap;

/// Kong's spec ids end in `…8101`, `…8102`, …: route `n` gets `e8fb37f1-102d-461e-9c51-6608a6bb81nn`.
fn kong_id(n: u128) -> u128 {
    0xe8fb37f1_102d_461e_9c51_6608a6bb8100 + (n / 10) * 16 + n % 10
}

/// A route numbered as in the spec (1-based), with Kong's id for that number.
fn route(n: usize) -> RouteSpec {
    RouteSpec {
        id: n,
        uuid: kong_id(n as u128),
        ..Default::default()
    }
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// One request: method, Host, path, headers, TLS SNI, and the route it must select.
struct Req {
    method: &'static str,
    host: &'static str,
    path: &'static str,
    headers: &'static [(&'static str, &'static str)],
    sni: Option<&'static str>,
    want: Option<usize>,
}

const fn get(host: &'static str, path: &'static str, want: Option<usize>) -> Req {
    Req {
        method: "GET",
        host,
        path,
        headers: &[],
        sni: None,
        want,
    }
}

fn check(routes: Vec<RouteSpec>, cases: &[Req]) {
    let router = Router::build(routes).unwrap();
    for c in cases {
        let mut headers = HeaderMap::new();
        for (k, v) in c.headers {
            headers.append(
                http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        let req = RequestParts {
            method: c.method,
            host: c.host,
            port: 8000,
            path: c.path,
            headers: &headers,
            sni: c.sni,
        };
        let got = router.find(&req).map(|m| m.id);
        assert_eq!(
            got, c.want,
            "{} {}{} {:?} sni={:?}",
            c.method, c.host, c.path, c.headers, c.sni
        );
    }
}

/// The spec's shared `select()` table: routes 1, 13 and 14 (plain hosts, a host with a port, a port-only
/// route) and route 9 (a header), enough for its host and port cases.
#[test]
fn select_host_and_port() {
    let routes = vec![
        RouteSpec {
            hosts: strings(&["domain-1.org", "domain-2.org"]),
            ..route(1)
        },
        RouteSpec {
            methods: strings(&["TRACE"]),
            ..route(2)
        },
        RouteSpec {
            paths: strings(&["/my-route"]),
            ..route(3)
        },
        RouteSpec {
            hosts: strings(&["domain-1.org:321", "domain-2.org"]),
            ..route(13)
        },
        RouteSpec {
            hosts: strings(&["domain-3.org:321"]),
            ..route(14)
        },
    ];
    check(
        routes,
        &[
            // "[host]"
            get("domain-1.org", "/", Some(1)),
            // "[host] ignores default port"
            get("domain-1.org:80", "/", Some(1)),
            // "[host] matches specific port": 1 and 13 tie, the larger id wins
            get("domain-1.org:321", "/", Some(13)),
            // "[host] matches specific port on port-only route"
            get("domain-3.org:321", "/", Some(14)),
            // "[host] fails just because of port on port-only route"
            get("domain-3.org:123", "/", None),
            // Without a port in Host, the listening port (8000 here) is the one compared.
            get("domain-3.org", "/", None),
            // "[uri]"
            get("domain.org", "/my-route", Some(3)),
        ],
    );
}

#[test]
fn listening_port_stands_in_when_host_has_none() {
    let routes = vec![RouteSpec {
        hosts: strings(&["a.org:8000"]),
        ..route(1)
    }];
    check(
        routes,
        &[
            get("a.org", "/", Some(1)),
            get("a.org:8000", "/", Some(1)),
            get("a.org:80", "/", None),
        ],
    );
}

/// "[header]" cases: `user_agent` and `USER_AGENT` name the `User-Agent` header; values are compared
/// lower-cased; a `~*` regex runs on the lower-cased value.
#[test]
fn header_names_are_normalized_as_nginx_variables() {
    let ua = |n: usize, name: &str, values: &[&str]| RouteSpec {
        headers: vec![(name.to_string(), strings(values))],
        ..route(n)
    };
    let req = |headers: &'static [(&'static str, &'static str)], want| Req {
        headers,
        ..get("h", "/", want)
    };
    check(
        vec![ua(1, "user_agent", &["foo"])],
        &[
            req(&[("user-agent", "foo")], Some(1)),
            req(&[("user-agent", "FOO")], Some(1)),
        ],
    );
    check(
        vec![ua(1, "USER_AGENT", &["foo"])],
        &[
            req(&[("user-agent", "foo")], Some(1)),
            req(&[("user_agent", "foo")], None),
        ],
    );
    check(
        vec![ua(
            15,
            "user_agent",
            &["~*windows|linux|os\\s+x\\s*[\\d\\._]+|solaris|bsd"],
        )],
        &[
            req(
                &[("user-agent", "Mozilla/5.0 (X11; Linux x86_64)")],
                Some(15),
            ),
            req(
                &[(
                    "user-agent",
                    "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7)",
                )],
                Some(15),
            ),
            req(&[("user-agent", "curl/8.0")], None),
        ],
    );
    check(
        vec![ua(9, "location", &["my-location-1", "my-location-2"])],
        &[
            req(&[("location", "my-location-1")], Some(9)),
            req(&[("location", "My-Location-2")], Some(9)),
            req(&[("location", "my-location-3")], None),
            req(
                &[("location", "my-location-3"), ("location", "my-location-2")],
                Some(9),
            ),
        ],
    );
}

/// "[sni]" and "[wildcard sni]": `*.sni.test` and `sni.*` match by suffix and prefix; http requests (no
/// server name) ignore SNIs.
#[test]
fn wildcard_snis() {
    let sni = |n: usize, s: &[&str]| RouteSpec {
        snis: strings(s),
        ..route(n)
    };
    let tls = |name: &'static str, want| Req {
        sni: Some(name),
        ..get("h", "/", want)
    };
    check(
        vec![
            sni(1, &["*.sni.test"]),
            sni(2, &["sni.*"]),
            sni(3, &["www.example.org"]),
        ],
        &[
            tls("foo.sni.test", Some(1)),
            tls("a.b.sni.test", Some(1)),
            tls("sni.anything", Some(2)),
            tls("www.example.org", Some(3)),
            tls("sni.test.org", Some(2)),
            tls("other.org", None),
        ],
    );
}

/// "[method] does not supersede [wildcard host]": a route without hosts does not outrank a wildcard-host
/// route; with equal priority the larger id (route 2) wins.
#[test]
fn equal_priority_goes_to_the_larger_id() {
    let routes = || {
        vec![
            RouteSpec {
                methods: strings(&["GET"]),
                ..route(1)
            },
            RouteSpec {
                hosts: strings(&["domain.*"]),
                ..route(2)
            },
        ]
    };
    check(
        routes(),
        &[
            get("nothing.com", "/", Some(1)),
            get("domain.com", "/", Some(2)),
        ],
    );
    // The same routes with the ids swapped: the id, not the order, decides.
    let mut swapped = routes();
    swapped[0].uuid = kong_id(2);
    swapped[1].uuid = kong_id(1);
    check(swapped, &[get("domain.com", "/", Some(1))]);
}

/// A route whose paths differ in length is split, each part with a derived id: Kong's case
/// "does not supersede another route with a longer [uri prefix]" (trad-only in the spec) and the
/// split route's own ranking per length.
#[test]
fn split_routes_rank_per_path_length() {
    let routes = vec![
        RouteSpec {
            paths: strings(&["/a", "/bbbbbbb"]),
            ..route(1)
        },
        RouteSpec {
            paths: strings(&["/a/bb"]),
            ..route(2)
        },
    ];
    check(
        routes,
        &[
            get("domain.org", "/a/bb/foobar", Some(2)),
            get("domain.org", "/a", Some(1)),
            get("domain.org", "/bbbbbbb/x", Some(1)),
        ],
    );
    // Derived ids are Kong's: UUID v5 of "<id>#<group>" in Kong's namespace.
    assert_eq!(
        uuid::Uuid::from_u128(crate::priority::split_id(kong_id(1), 1)).get_version_num(),
        5
    );
}

/// "gracefully handles invalid utf-8 sequences": a path whose decoded bytes are not UTF-8 matches no
/// route, even a catch-all; escapes of valid UTF-8 are decoded before matching, and the matched length is
/// counted in the path as sent (what `strip_path` cuts).
#[test]
fn paths_are_matched_decoded_and_invalid_utf8_matches_nothing() {
    let routes = vec![
        RouteSpec {
            paths: strings(&["/"]),
            ..route(1)
        },
        RouteSpec {
            paths: strings(&["/café"]),
            ..route(2)
        },
        RouteSpec {
            paths: strings(&["~/u/(?<name>[^/]+)$"]),
            ..route(3)
        },
    ];
    check(
        routes.clone(),
        &[
            get("example.org", "/%FC%80%80%80%80%AF", None),
            get("example.org", "/hello", Some(1)),
            get("example.org", "/caf%C3%A9/menu", Some(2)),
            get("example.org", "/café/menu", Some(2)),
            get("example.org", "/u/%C3%A9t%C3%A9", Some(3)),
        ],
    );
    let router = Router::build(routes).unwrap();
    let h = HeaderMap::new();
    let find = |path| {
        router
            .find(&RequestParts {
                method: "GET",
                host: "example.org",
                port: 8000,
                path,
                headers: &h,
                sni: None,
            })
            .unwrap()
    };
    assert_eq!(find("/caf%C3%A9/menu").matched_path.unwrap().len, 10);
    assert_eq!(find("/café/menu").matched_path.unwrap().len, 6);
    let m = find("/u/%C3%A9t%C3%A9");
    assert_eq!(m.matched_path.unwrap().len, "/u/%C3%A9t%C3%A9".len());
    assert_eq!(
        m.captures.unwrap().named,
        vec![("name".to_string(), "été".to_string())]
    );
}
