//! The router's share of the spec's `exec()` cases: what it returns besides the route — regex captures
//! ("uri_captures …") and the matched prefix that `strip_path` cuts ("stripped paths #strip", "allows url
//! encoded paths …") — and "gracefully handles invalid utf-8 sequences". The upstream URI, host and port
//! built from them are the proxy's (docs/router-cases.md).

use super::*;

/// The match for `GET <path>` with `Host: domain.org`.
fn exec(routes: Vec<RouteSpec>, path: &'static str) -> Match {
    let router = Router::build(routes).unwrap();
    run(&router, &get("domain.org", path, None)).expect(path)
}

fn prefix_len(m: &Match) -> usize {
    m.matched_path.expect("a path matched").len
}

#[test]
fn uri_captures() {
    // works well with the optional capture group (#13014): an unmatched group is absent
    let m = exec(
        vec![r(
            1,
            &[("paths", &["~/(users/)?1984/(?<subpath>profile)$"])],
        )],
        "/1984/profile",
    );
    let caps = m.captures.unwrap();
    assert_eq!(caps.unnamed.get(1), Some(&None));
    assert_eq!(
        caps.named,
        vec![("subpath".to_string(), "profile".to_string())]
    );
    // returns uri_captures from a [uri regex], by index and name, the whole match at 0; empty groups are ""
    let routes = || {
        vec![r(
            1,
            &[(
                "paths",
                &["~/users/(?P<user_id>\\d+)/profile/?(?P<scope>[a-z]*)"],
            )],
        )]
    };
    for (path, scope) in [
        ("/users/1984/profile", ""),
        ("/users/1984/profile/email", "email"),
    ] {
        let caps = exec(routes(), path).captures.unwrap();
        let s = |v: &str| Some(v.to_string());
        assert_eq!(caps.unnamed, vec![s(path), s("1984"), s(scope)]);
        assert_eq!(
            caps.named,
            vec![
                ("user_id".into(), "1984".into()),
                ("scope".into(), scope.into())
            ]
        );
    }
    // returns uri_captures normalized (#7913): the proxy hands over `/users/john doe/profile`
    let routes = vec![r(
        1,
        &[(
            "paths",
            &["~/users/(?P<fullname>[a-zA-Z\\s\\d%]+)/profile/?(?P<scope>[a-z]*)"],
        )],
    )];
    let caps = exec(routes, "/users/john doe/profile").captures.unwrap();
    assert_eq!(caps.unnamed[0].as_deref(), Some("/users/john doe/profile"));
    assert_eq!(
        caps.named[0],
        ("fullname".to_string(), "john doe".to_string())
    );
    // no uri_captures from a [uri prefix] match
    assert!(exec(vec![r(1, &[("paths", &["/hello"])])], "/hello/world")
        .captures
        .is_none());
    // a [uri regex] without groups: only the whole match (Kong then reports none; the proxy decides)
    let caps = exec(
        vec![r(1, &[("paths", &["~/users/\\d+/profile"])])],
        "/users/1984/profile",
    )
    .captures
    .unwrap();
    assert_eq!(caps.unnamed.len(), 1);
    assert!(caps.named.is_empty());
}

#[test]
fn stripped_prefixes() {
    let routes = || {
        let mut post = r(
            2,
            &[
                ("methods", &["POST"]),
                ("paths", &["/my-route", "/xx-route"]),
            ],
        );
        post.uuid = 2;
        vec![r(1, &[("paths", &["/my-route", "/xx-route"])]), post]
    };
    // strips the specified paths; strips if matched URI is plain; several times and different URIs in a row
    for path in [
        "/my-route/hello/world",
        "/my-route",
        "/xx-route",
        "/my-route",
        "/xx-route",
    ] {
        let m = exec(routes(), path);
        assert_eq!((m.id, prefix_len(&m)), (1, 9), "{path}");
    }
    // doesn't strip if 'strip_uri' is not enabled: route 2 (POST) is chosen; whether to cut is the proxy's
    let router = Router::build(routes()).unwrap();
    let m = run(
        &router,
        &req("POST", "domain.org", "/my-route/hello/world", None),
    )
    .unwrap();
    assert_eq!(m.id, 2);
    // does not strip root / URI: the matched prefix is `/`
    assert_eq!(
        prefix_len(&exec(
            vec![r(1, &[("paths", &["/"])])],
            "/my-route/hello/world"
        )),
        1
    );
    // strips url encoded paths / allows url encoded paths if they are reserved characters
    let m = exec(vec![r(1, &[("paths", &["/endel%2Fst"])])], "/endel%2Fst");
    assert_eq!(prefix_len(&m), "/endel%2Fst".len());
    // strips a [uri regex], with or without a capture group: the whole match
    for re in ["~/users/\\d+/profile", "~/users/(\\d+)/profile"] {
        let m = exec(
            vec![r(1, &[("paths", &[re])])],
            "/users/123/profile/hello/world",
        );
        assert_eq!(prefix_len(&m), "/users/123/profile".len(), "{re}");
    }
}

/// "gracefully handles invalid utf-8 sequences": a path whose decoded bytes are not UTF-8 matches no
/// route, even a catch-all; escapes of valid UTF-8 are decoded before matching, and the matched length is
/// counted in the path as sent (what `strip_path` cuts).
#[test]
fn paths_are_matched_decoded_and_invalid_utf8_matches_nothing() {
    let routes = || {
        vec![
            r(1, &[("paths", &["/"])]),
            r(2, &[("paths", &["/café"])]),
            r(3, &[("paths", &["~/u/(?<name>[^/]+)$"])]),
        ]
    };
    check(
        routes(),
        &[
            get("example.org", "/%FC%80%80%80%80%AF", None),
            get("example.org", "/hello", Some(1)),
            get("example.org", "/caf%C3%A9/menu", Some(2)),
            get("example.org", "/café/menu", Some(2)),
            get("example.org", "/u/%C3%A9t%C3%A9", Some(3)),
        ],
    );
    assert_eq!(prefix_len(&exec(routes(), "/caf%C3%A9/menu")), 10);
    assert_eq!(prefix_len(&exec(routes(), "/café/menu")), 6);
    let m = exec(routes(), "/u/%C3%A9t%C3%A9");
    assert_eq!(prefix_len(&m), "/u/%C3%A9t%C3%A9".len());
    assert_eq!(
        m.captures.unwrap().named,
        vec![("name".to_string(), "été".to_string())]
    );
}

/// The routing half of "returns parsed upstream_url + upstream_uri", "returns matched_host + matched_uri
/// + matched_method + matched_headers" and "works with special characters('\"','\\')".
#[test]
fn exec_selects() {
    check(
        vec![
            r(1, &[("paths", &["/my-route"])]),
            r(2, &[("paths", &["/my-route-2"])]),
        ],
        &[
            get("domain.org", "/my-route", Some(1)),
            get("domain.org", "/my-route-2", Some(2)),
        ],
    );
    check(
        vec![
            r(
                1,
                &[
                    ("hosts", &["host.com"]),
                    ("methods", &["GET"]),
                    ("paths", &["/my-route"]),
                ],
            ),
            r(2, &[("hosts", &["host.com"]), ("paths", &["/my-route"])]),
            r(
                3,
                &[
                    ("hosts", &["*.host.com"]),
                    ("h:location", &["my-location-1", "my-location-2"]),
                ],
            ),
            r(4, &[("paths", &["~/users/\\d+/profile"])]),
        ],
        &[
            get("host.com", "/my-route", Some(1)),
            get("host.com", "/my-route/prefix/match", Some(1)),
            req("POST", "host.com", "/my-route", Some(2)),
            Req {
                headers: &[("location", "my-location-1")],
                ..get("test.host.com", "/", Some(3))
            },
            get("domain.org", "/users/123/profile", Some(4)),
        ],
    );
    check(
        vec![
            r(1, &[("paths", &["/\\d"])]),
            r(2, &[("paths", &["~/\\d+\""])]),
        ],
        &[
            get("domain.org", "/\\d", Some(1)),
            get("domain.org", "/123\"", Some(2)),
        ],
    );
}
