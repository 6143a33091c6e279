//! Table tests: each priority rule alone and combined, field matching edge cases, and a comparison of the
//! indexed router with a linear reference over generated tables.

use super::*;
use http::HeaderMap;

fn spec(id: usize) -> RouteSpec {
    RouteSpec {
        id,
        uuid: id as u128,
        ..Default::default()
    }
}

fn paths(id: usize, p: &[&str]) -> RouteSpec {
    RouteSpec {
        paths: p.iter().map(|s| s.to_string()).collect(),
        ..spec(id)
    }
}

fn find(
    router: &Router,
    method: &str,
    host: &str,
    path: &str,
    headers: &[(&str, &str)],
) -> Option<usize> {
    let mut map = HeaderMap::new();
    for (k, v) in headers {
        map.append(
            http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
            v.parse().unwrap(),
        );
    }
    router
        .find(&RequestParts {
            method,
            host,
            port: 8000,
            path,
            headers: &map,
            sni: None,
        })
        .map(|m| m.id)
}

type Case = (
    &'static str,
    &'static str,
    &'static str,
    &'static [(&'static str, &'static str)],
    Option<usize>,
);

fn check(routes: Vec<RouteSpec>, cases: &[Case]) {
    let router = Router::build(routes).unwrap();
    for (method, host, path, headers, want) in cases {
        assert_eq!(
            find(&router, method, host, path, headers),
            *want,
            "{method} {host}{path} {headers:?}"
        );
    }
}

#[test]
fn prefix_paths_longest_wins_and_plain_prefix_semantics() {
    check(
        vec![
            paths(0, &["/"]),
            paths(1, &["/api"]),
            paths(2, &["/api/v1"]),
        ],
        &[
            ("GET", "h", "/", &[], Some(0)),
            ("GET", "h", "/apix", &[], Some(1)),
            ("GET", "h", "/api/v1/users", &[], Some(2)),
            ("GET", "h", "/api/v2", &[], Some(1)),
            ("GET", "h", "/other", &[], Some(0)),
        ],
    );
}

#[test]
fn regex_beats_prefix_and_regex_priority_orders_regexes() {
    let mut low = paths(1, &["~/users/\\d+$"]);
    low.regex_priority = 1;
    let mut high = paths(2, &["~/users/(?<id>\\d+)$"]);
    high.regex_priority = 5;
    check(
        vec![paths(0, &["/users/1"]), low, high],
        &[
            ("GET", "h", "/users/1", &[], Some(2)),
            ("GET", "h", "/users/x", &[], None),
        ],
    );
}

#[test]
fn more_fields_win_then_plain_hosts_over_wildcards_then_more_headers() {
    let with_host = RouteSpec {
        hosts: vec!["example.com".into()],
        ..paths(1, &["/"])
    };
    let with_method = RouteSpec {
        methods: vec!["POST".into()],
        ..with_host.clone()
    };
    check(
        vec![
            paths(0, &["/"]),
            with_host,
            RouteSpec {
                id: 2,
                uuid: 2,
                ..with_method
            },
        ],
        &[
            ("GET", "example.com", "/", &[], Some(1)),
            ("POST", "example.com", "/", &[], Some(2)),
            ("POST", "other.com", "/", &[], Some(0)),
        ],
    );
    let wild = RouteSpec {
        hosts: vec!["*.example.com".into()],
        ..spec(0)
    };
    let plain = RouteSpec {
        hosts: vec!["a.example.com".into()],
        ..spec(1)
    };
    check(
        vec![wild, plain],
        &[
            ("GET", "a.example.com", "/", &[], Some(1)),
            ("GET", "b.example.com", "/", &[], Some(0)),
        ],
    );
    let one = RouteSpec {
        headers: vec![("x-a".into(), vec!["1".into()])],
        ..spec(0)
    };
    let two = RouteSpec {
        headers: vec![
            ("x-a".into(), vec!["1".into()]),
            ("x-b".into(), vec!["2".into()]),
        ],
        ..spec(1)
    };
    check(
        vec![one, two],
        &[
            ("GET", "h", "/", &[("x-a", "1"), ("x-b", "2")], Some(1)),
            ("GET", "h", "/", &[("x-a", "1")], Some(0)),
            ("GET", "h", "/", &[("x-b", "2")], None),
        ],
    );
}

#[test]
fn larger_id_wins_a_full_tie() {
    let a = RouteSpec {
        uuid: 5,
        ..paths(0, &["/same"])
    };
    let b = RouteSpec {
        uuid: 3,
        ..paths(1, &["/same"])
    };
    check(vec![a, b], &[("GET", "h", "/same", &[], Some(0))]);
}

#[test]
fn each_path_of_a_route_ranks_at_its_own_length() {
    check(
        vec![paths(0, &["/a", "/b/c/d"]), paths(1, &["/b/c"])],
        &[
            ("GET", "h", "/b/c/d/e", &[], Some(0)),
            ("GET", "h", "/b/c/x", &[], Some(1)),
            ("GET", "h", "/a", &[], Some(0)),
        ],
    );
}

#[test]
fn hosts_ports_wildcards_and_case() {
    let routes = vec![
        RouteSpec {
            hosts: vec!["Example.COM".into()],
            ..spec(0)
        },
        RouteSpec {
            hosts: vec!["api.test:8080".into()],
            ..spec(1)
        },
        RouteSpec {
            hosts: vec!["shop.*".into()],
            ..spec(2)
        },
        RouteSpec {
            hosts: vec!["*.deep.org".into()],
            ..spec(3)
        },
    ];
    check(
        routes,
        &[
            ("GET", "example.com", "/", &[], Some(0)),
            ("GET", "EXAMPLE.com:9999", "/", &[], Some(0)),
            ("GET", "api.test:8080", "/", &[], Some(1)),
            ("GET", "api.test:8081", "/", &[], None),
            ("GET", "api.test", "/", &[], None),
            ("GET", "shop.example.net", "/", &[], Some(2)),
            ("GET", "a.b.deep.org", "/", &[], Some(3)),
            ("GET", "deep.org", "/", &[], None),
        ],
    );
}

#[test]
fn methods_and_header_regexes() {
    let routes = vec![
        RouteSpec {
            methods: vec!["GET".into(), "HEAD".into()],
            ..paths(0, &["/m"])
        },
        RouteSpec {
            headers: vec![("x-version".into(), vec!["~*^v[12]$".into(), "beta".into()])],
            ..spec(1)
        },
    ];
    check(
        routes,
        &[
            ("HEAD", "h", "/m", &[], Some(0)),
            ("POST", "h", "/m", &[], None),
            ("get", "h", "/m", &[], None),
            ("GET", "h", "/", &[("x-version", "V2")], Some(1)),
            ("GET", "h", "/", &[("x-version", "BETA")], Some(1)),
            (
                "GET",
                "h",
                "/",
                &[("x-version", "v3"), ("x-version", "v1")],
                Some(1),
            ),
            ("GET", "h", "/", &[("x-version", "v3")], None),
        ],
    );
}

#[test]
fn matched_path_and_captures() {
    let router = Router::build(vec![
        paths(0, &["/api"]),
        paths(1, &["~/u/(?<id>\\d+)/(\\w+)"]),
    ])
    .unwrap();
    let h = HeaderMap::new();
    let m = router
        .find(&RequestParts {
            method: "GET",
            host: "",
            port: 8000,
            path: "/api/x",
            headers: &h,
            sni: None,
        })
        .unwrap();
    assert_eq!(
        m.matched_path,
        Some(MatchedPath {
            len: 4,
            regex: false
        })
    );
    assert!(m.captures.is_none());
    let m = router
        .find(&RequestParts {
            method: "GET",
            host: "",
            port: 8000,
            path: "/u/42/abc/rest",
            headers: &h,
            sni: None,
        })
        .unwrap();
    assert_eq!(
        m.matched_path,
        Some(MatchedPath {
            len: 9,
            regex: true
        })
    );
    let caps = m.captures.unwrap();
    assert_eq!(caps.named, vec![("id".to_string(), "42".to_string())]);
    assert_eq!(
        caps.unnamed,
        vec![
            Some("/u/42/abc".into()),
            Some("42".into()),
            Some("abc".into())
        ]
    );
}

#[test]
fn empty_router_and_bad_regexes() {
    let router = Router::build(vec![]).unwrap();
    assert!(router.is_empty());
    assert_eq!(find(&router, "GET", "h", "/", &[]), None);
    let errs = Router::build(vec![
        paths(0, &["~/ok"]),
        paths(7, &["~/(unclosed", "~/[z-a]"]),
    ])
    .err()
    .unwrap();
    assert_eq!(errs.len(), 2);
    assert!(errs.iter().all(|e| e.route == 7));
}

/// The linear reference: the best candidate by the same rules, computed without any index.
fn reference(
    routes: &[std::sync::Arc<matcher::CompiledRoute>],
    path: &str,
    host: &str,
) -> Option<usize> {
    let h = HeaderMap::new();
    let req = RequestParts {
        method: "GET",
        host,
        port: 8000,
        path,
        headers: &h,
        sni: None,
    };
    let decoded = path::decode(path).unwrap();
    let input = matcher::Input::new(&req, &decoded);
    let held: Vec<_> = routes
        .iter()
        .cloned()
        .map(crate::routes::Slot::New)
        .collect();
    let ranking = priority::Ranking::of(&crate::routes::Routes::build(&held, None));
    ranking.candidates.into_iter().find_map(|(ri, pi)| {
        let r = &routes[ri as usize];
        let path_ok = pi.is_none_or(|p| r.paths[p as usize].matches(path).is_some());
        (r.matches_non_path(&input) && path_ok).then_some(ri as usize)
    })
}

/// A small deterministic generator: `next(n)` is in `0..n`.
fn xorshift(mut seed: u64) -> impl FnMut(u64) -> u64 {
    move |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    }
}

#[test]
fn indexed_router_agrees_with_linear_reference() {
    agrees_with_linear_reference();
}

/// Prefixes of one length that share a key in the prefix map (every two of them, here) share its entry,
/// and each request still gets the route its own path matches.
#[test]
fn prefixes_that_share_a_key_still_route_as_the_reference() {
    index::collide(true);
    agrees_with_linear_reference();
    index::collide(false);
}

/// Generated tables of routes, each matched against a linear reference.
fn agrees_with_linear_reference() {
    let mut next = xorshift(0x2545F4914F6CDD1D);
    let segs = ["a", "b", "ab", "api", "v1"];
    for _round in 0..40 {
        let mut specs = Vec::new();
        for id in 0..30 {
            let mut s = spec(id);
            s.uuid = next(10) as u128;
            for _ in 0..next(3) {
                let depth = 1 + next(3);
                let p: String = (0..depth)
                    .map(|_| format!("/{}", segs[next(5) as usize]))
                    .collect();
                if next(4) == 0 {
                    s.paths.push(format!("~{p}(/\\d+)?$"));
                    s.regex_priority = next(3) as i64;
                } else {
                    s.paths.push(p);
                }
            }
            if next(3) == 0 {
                s.hosts
                    .push(["x.com", "*.com", "y.*"][next(3) as usize].into());
            }
            if s.paths.is_empty() && s.hosts.is_empty() {
                s.methods.push("GET".into());
            }
            specs.push(s);
        }
        let compiled: Vec<_> = specs
            .iter()
            .map(|s| std::sync::Arc::new(matcher::CompiledRoute::compile(s).unwrap()))
            .collect();
        let router = Router::build(specs).unwrap();
        for _ in 0..60 {
            let depth = next(4);
            let path: String = (0..depth)
                .map(|_| format!("/{}", segs[next(5) as usize]))
                .collect::<String>()
                + "/1";
            let host = ["x.com", "y.org", "z.com"][next(3) as usize];
            assert_eq!(
                find(&router, "GET", host, &path, &[]),
                reference(&compiled, &path, host),
                "{host}{path}"
            );
        }
    }
}

/// A router built from routes compiled by an earlier one (their indexes shifted, as after a delete) and
/// one new route matches as a fresh build of the same routes would.
#[test]
fn a_router_reusing_compiled_routes_matches_as_a_fresh_one() {
    let first = Router::build(vec![
        paths(0, &["/a"]),
        paths(1, &["~/b/\\d+$"]),
        paths(2, &["/a/b"]),
    ])
    .unwrap();
    let inputs = vec![
        RouteInput::Compiled(0, first.compiled(1).unwrap()),
        RouteInput::Compiled(1, first.compiled(2).unwrap()),
        RouteInput::Spec(Box::new(paths(2, &["/c"]))),
    ];
    let next = Router::build_from(inputs, Some(&first)).unwrap();
    let fresh = Router::build(vec![
        paths(0, &["~/b/\\d+$"]),
        paths(1, &["/a/b"]),
        paths(2, &["/c"]),
    ])
    .unwrap();
    for (path, want) in [
        ("/b/12", Some(0)),
        ("/a/b/c", Some(1)),
        ("/c", Some(2)),
        ("/a", None),
    ] {
        assert_eq!(find(&next, "GET", "x", path, &[]), want, "{path}");
        assert_eq!(find(&fresh, "GET", "x", path, &[]), want, "{path}");
    }
    assert!(first.compiled(3).is_none());
}

/// A build after an earlier router keeps the unchanged routes' ranking and merges in the rest: over
/// random changes (routes dropped, changed, added, moved), its ranking is the ranking of a fresh build.
#[test]
fn a_ranking_kept_across_builds_is_the_fresh_ranking() {
    let mut next = xorshift(0x9E3779B97F4A7C15);
    // Route ids are unique in a config, but every fifth round gives some routes the same id, which
    // the build must notice (it then ranks from scratch).
    let mut made = 0u128;
    let mut random_spec = |id: usize, next: &mut dyn FnMut(u64) -> u64, unique: bool| {
        let mut s = spec(id);
        made += 1;
        s.uuid = (next(1000) as u128) << 32 | if unique { made } else { 0 };
        for _ in 0..next(4) {
            match next(3) {
                0 => s.paths.push(format!("~/r{}$", next(9))),
                _ => s
                    .paths
                    .push(format!("/{}", "ab".repeat(1 + next(3) as usize))),
            }
        }
        s.regex_priority = next(3) as i64 - 1;
        if next(3) == 0 {
            s.hosts.push("x.com".into());
        }
        s
    };
    for round in 0..50 {
        let unique = round % 5 != 0;
        let specs: Vec<RouteSpec> = (0..40).map(|i| random_spec(i, &mut next, unique)).collect();
        let first = Router::build(specs.clone()).unwrap();
        // The next config: each old route dropped, kept or changed, some new ones, in a shuffled order.
        let mut kept: Vec<(Option<usize>, RouteSpec)> = Vec::new();
        for (old, s) in specs.iter().enumerate() {
            match next(5) {
                0 => {}
                1 => kept.push((None, random_spec(0, &mut next, unique))),
                _ => kept.push((Some(old), s.clone())),
            }
        }
        for _ in 0..next(5) {
            kept.push((None, random_spec(0, &mut next, unique)));
        }
        for i in (1..kept.len()).rev() {
            kept.swap(i, next(i as u64 + 1) as usize);
        }
        let mut fresh_specs = Vec::new();
        let mut inputs = Vec::new();
        let mut from = Vec::new();
        for (at, (old, mut s)) in kept.into_iter().enumerate() {
            s.id = at;
            inputs.push(match old {
                Some(old) => RouteInput::Compiled(at, first.compiled(old).unwrap()),
                None => RouteInput::Spec(Box::new(s.clone())),
            });
            from.push(old.map(|o| o as u32));
            fresh_specs.push(s);
        }
        let after = Router::build_from(inputs, Some(&first)).unwrap();
        let fresh = Router::build(fresh_specs).unwrap();
        assert_eq!(after.ranking.candidates, fresh.ranking.candidates);
        // With unique ids the ranking was merged, not made from scratch.
        if unique {
            let (_, moves) = priority::Ranking::after(&after.routes, &from, &first.ranking);
            assert!(moves.is_some(), "round {round}");
        }
        assert_eq!(indexed(&after), indexed(&fresh), "round {round}");
    }
}

/// A router's indexes, comparable: prefixes with their ranks, prefix lengths, scanned candidates,
/// regex patterns.
type Indexed = (
    std::collections::BTreeMap<index::PrefixKey, Vec<u32>>,
    Vec<(usize, u32)>,
    Vec<(u32, Option<usize>)>,
    Vec<String>,
);

fn indexed(r: &Router) -> Indexed {
    let prefixes = (r.index.prefixes.iter())
        .map(|(k, v)| (*k, v.as_slice().to_vec()))
        .collect();
    (
        prefixes,
        r.index.prefix_lengths.clone(),
        r.index.scanned.clone(),
        r.index.patterns.clone(),
    )
}

mod kong;
