//! Unit tests of `snapshot`.

use super::*;

#[test]
fn targets_split_like_kong() {
    assert_eq!(split_target("10.0.0.1:8080"), Some(("10.0.0.1", 8080)));
    assert_eq!(split_target("api.test"), Some(("api.test", 8000)));
    assert_eq!(split_target("[::1]:81"), Some(("[::1]", 81)));
    assert_eq!(split_target("[::1]"), Some(("[::1]", 8000)));
    assert_eq!(split_target("host:notaport"), None);
    assert_eq!(split_target("::1"), None);
}

#[test]
fn the_empty_snapshot_has_no_routes() {
    let s = Snapshot::empty();
    assert!(s.router.is_empty());
    assert!(s.config().routes.is_empty());
    assert_eq!(s.compile_duration(), Duration::ZERO);
}

fn routes_config(routes: &[(u128, &str)]) -> Arc<Config> {
    let routes: Vec<serde_json::Value> = routes
        .iter()
        .map(|(id, path)| serde_json::json!({"id": uuid::Uuid::from_u128(*id), "paths": [path]}))
        .collect();
    let doc = serde_json::json!({"_format_version": "3.0", "services": [
        {"name": "s", "url": "http://127.0.0.1:9", "routes": routes}]});
    let registry = Registry::builtin();
    Arc::new(sluice_model::declarative::parse_value(doc, &registry).unwrap())
}

fn routed(s: &Snapshot, path: &str) -> Option<u128> {
    let headers = http::HeaderMap::new();
    let req = sluice_router::RequestParts {
        method: "GET",
        host: "x",
        port: 8000,
        path,
        headers: &headers,
        sni: None,
    };
    let m = s.router.find(&req)?;
    assert_eq!(s.routes.len(), s.config().routes.len());
    Some(s.config().routes[m.id].id.as_u128())
}

/// A compile after a change (a route deleted, one changed, one added) reuses the unchanged routes' compiled
/// form, whose indexes moved, and routes exactly as a compile from scratch.
#[test]
fn a_compile_after_a_change_routes_as_a_fresh_one() {
    let registry = Registry::builtin();
    let first =
        Snapshot::compile(routes_config(&[(1, "/a"), (2, "/b"), (3, "/c")]), &registry).unwrap();
    let changed = routes_config(&[(2, "/b"), (3, "/c2"), (4, "/d")]);
    let next = Snapshot::compile_after(changed.clone(), &registry, Some(&first)).unwrap();
    let fresh = Snapshot::compile(changed, &registry).unwrap();
    for (path, want) in [
        ("/b", Some(2)),
        ("/c2", Some(3)),
        ("/d", Some(4)),
        ("/c", None),
        ("/a", None),
    ] {
        assert_eq!(routed(&next, path), want, "{path}");
        assert_eq!(routed(&fresh, path), want, "{path}");
    }
}

/// A patched config's compile takes the routes it is told did not change as they are, and compiles the
/// changed ones: it routes as a fresh compile (it is told the truth here), and a route it is told is
/// unchanged keeps its live form (the contract: the caller names every changed route).
#[test]
fn a_patched_compile_compiles_the_changed_routes_only() {
    let registry = Registry::builtin();
    let first =
        Snapshot::compile(routes_config(&[(1, "/a"), (2, "/b"), (3, "/c")]), &registry).unwrap();
    let changed = routes_config(&[(1, "/a"), (2, "/b2"), (3, "/c2")]);
    let told: RouteIds = [uuid::Uuid::from_u128(2)].into_iter().collect();
    let next = Snapshot::compile_patched(changed, &registry, &first, &told).unwrap();
    for (path, want) in [
        ("/a", Some(1)),
        ("/b2", Some(2)),
        ("/b", None),
        ("/c", Some(3)),
    ] {
        assert_eq!(routed(&next, path), want, "{path}");
    }
}

fn service_config(service: serde_json::Value, routes: &[(u128, &str)]) -> Arc<Config> {
    let mut service = service;
    service["routes"] = routes
        .iter()
        .map(|(id, path)| serde_json::json!({"id": uuid::Uuid::from_u128(*id), "paths": [path]}))
        .collect();
    let doc = serde_json::json!({"_format_version": "3.0", "services": [service]});
    Arc::new(sluice_model::declarative::parse_value(doc, &Registry::builtin()).unwrap())
}

/// What the request path reads of a route's facts, comparable.
fn facts(s: &Snapshot) -> Vec<String> {
    s.routes
        .iter()
        .map(|r| {
            let grpc = r.grpc;
            let metrics = r.metrics.as_ref().map(|m| m.flags());
            format!(
                "{} {} {} {} {} {} {} {:?} {grpc:?} {metrics:?}",
                r.https_only,
                r.strip_path,
                r.preserve_host,
                r.path_handling_v1,
                r.https_redirect_status,
                r.request_buffering,
                r.response_buffering,
                r.service,
            )
        })
        .collect()
}

/// A patch that changes a service and no route (the routes are the live ones): the routes' facts and
/// whether they are routed follow the service, as in a fresh compile (the live ones are kept only when the
/// services are the live ones).
#[test]
fn a_patched_compile_of_a_changed_service_compiles_its_routes_facts_again() {
    let registry = Registry::builtin();
    let routes = [(1, "/a"), (2, "/b")];
    let live = service_config(
        serde_json::json!({"name": "s", "url": "http://127.0.0.1:9"}),
        &routes,
    );
    let first = Snapshot::compile(live, &registry).unwrap();
    let none = RouteIds::default();
    for service in [
        serde_json::json!({"name": "s", "protocol": "grpc", "host": "127.0.0.1", "port": 9}),
        serde_json::json!({"name": "s", "url": "http://127.0.0.1:9", "enabled": false}),
        serde_json::json!({"name": "s", "url": "http://127.0.0.1:9"}),
    ] {
        let next = service_config(service.clone(), &routes);
        let patched = Snapshot::compile_patched(next.clone(), &registry, &first, &none).unwrap();
        let fresh = Snapshot::compile(next, &registry).unwrap();
        assert_eq!(facts(&patched), facts(&fresh), "{service}");
        for path in ["/a", "/b"] {
            assert_eq!(
                routed(&patched, path),
                routed(&fresh, path),
                "{service} {path}"
            );
        }
    }
}

/// A patch of one route among many with a prometheus instance on the service: every route's facts are a
/// fresh compile's, those of the unchanged routes taken from the live snapshot.
#[test]
fn a_patched_compile_keeps_the_unchanged_routes_facts() {
    let registry = Registry::builtin();
    let with_prometheus = |routes: &[(u128, &str)]| {
        let routes: Vec<serde_json::Value> = routes
            .iter()
            .map(
                |(id, path)| serde_json::json!({"id": uuid::Uuid::from_u128(*id), "paths": [path]}),
            )
            .collect();
        let doc = serde_json::json!({"_format_version": "3.0", "services": [
            {"name": "s", "url": "http://127.0.0.1:9", "routes": routes,
             "plugins": [{"name": "prometheus", "config": {"per_consumer": true}}]}]});
        Arc::new(sluice_model::declarative::parse_value(doc, &registry).unwrap())
    };
    let first = Snapshot::compile(
        with_prometheus(&[(1, "/a"), (2, "/b"), (3, "/c")]),
        &registry,
    )
    .unwrap();
    let next = with_prometheus(&[(1, "/a"), (2, "/b2"), (3, "/c")]);
    let told: RouteIds = [uuid::Uuid::from_u128(2)].into_iter().collect();
    let patched = Snapshot::compile_patched(next.clone(), &registry, &first, &told).unwrap();
    let fresh = Snapshot::compile(next, &registry).unwrap();
    assert!(patched.routes.iter().all(|r| r.metrics.is_some()));
    assert_eq!(facts(&patched), facts(&fresh));
    assert!(patched.consumer_slots.len() == fresh.consumer_slots.len());
}

/// A patched compile skips reading every route's protocols when the live snapshot had no stream route,
/// but still finds one that a changed route became.
#[test]
fn a_patched_compile_finds_a_changed_route_that_became_a_stream_route() {
    let registry = Registry::builtin();
    let config = |tcp: bool| {
        let third = match tcp {
            true => serde_json::json!({"id": uuid::Uuid::from_u128(3), "service": "t",
                "protocols": ["tcp"], "destinations": [{"port": 5555}]}),
            false => serde_json::json!({"id": uuid::Uuid::from_u128(3), "service": "s",
                "paths": ["/c"]}),
        };
        let doc = serde_json::json!({"_format_version": "3.0",
            "services": [{"name": "s", "url": "http://127.0.0.1:9"},
                {"name": "t", "protocol": "tcp", "host": "127.0.0.1", "port": 9}],
            "routes": [{"id": uuid::Uuid::from_u128(1), "service": "s", "paths": ["/a"]},
                {"id": uuid::Uuid::from_u128(2), "service": "s", "paths": ["/b"]}, third]});
        Arc::new(sluice_model::declarative::parse_value(doc, &registry).unwrap())
    };
    let first = Snapshot::compile(config(false), &registry).unwrap();
    assert!(first.streams.routes.is_empty());
    let changed: RouteIds = [uuid::Uuid::from_u128(3)].into_iter().collect();
    let next = Snapshot::compile_patched(config(true), &registry, &first, &changed).unwrap();
    assert_eq!(next.streams.routes.len(), 1);
    assert_eq!(routed(&next, "/c"), None);
    let back = Snapshot::compile_patched(config(false), &registry, &next, &changed).unwrap();
    assert!(back.streams.routes.is_empty());
    assert_eq!(routed(&back, "/c"), Some(3));
}

/// Patched compiles one after another, each on the one before (as a node applies a stream of changes):
/// routes changed in place, deleted and added, on paths several routes share. Each routes as a fresh
/// compile of its config, so what the router keeps from build to build (its ranking, the prefix map's
/// slots and shards) never points at a route it no longer means.
#[test]
fn patched_compiles_one_after_another_route_as_fresh_ones() {
    patched_compiles_route_as_fresh_ones(|step, routes| {
        let mut told = RouteIds::default();
        let at = step * 7 % routes.len();
        routes[at].1 = format!("/n{step}");
        told.insert(uuid::Uuid::from_u128(routes[at].0));
        if step % 3 == 0 {
            routes.remove((step * 5 + 1) % routes.len());
        }
        if step % 4 == 0 {
            routes.push((100 + step as u128, format!("/p{}", step % 7)));
            told.insert(uuid::Uuid::from_u128(100 + step as u128));
        }
        (told, None)
    });
}

/// Patched compiles told where the patch replaced routes in place (`compile_patched_at`, as a node
/// does after patching its spare config) route as fresh ones: the routes at other indexes are taken
/// unread, the replaced ones compiled again; a step that adds or removes a route gives no indexes.
#[test]
fn patched_compiles_told_the_replaced_indexes_route_as_fresh_ones() {
    patched_compiles_route_as_fresh_ones(|step, routes| {
        let at = step * 7 % routes.len();
        routes[at].1 = format!("/n{step}");
        let mut told: RouteIds = [uuid::Uuid::from_u128(routes[at].0)].into_iter().collect();
        if step % 5 == 4 {
            routes.push((100 + step as u128, format!("/p{}", step % 7)));
            told.insert(uuid::Uuid::from_u128(100 + step as u128));
            return (told, None);
        }
        (told, Some(vec![at]))
    });
}

/// 24 patched compiles of 30 routes on 7 shared paths, each on the one before. `change` edits the routes
/// at step `step` and says which it changed and, when it replaced them in place, at which indexes. Each
/// compile must route as a fresh compile of its config.
fn patched_compiles_route_as_fresh_ones(
    mut change: impl FnMut(usize, &mut Vec<(u128, String)>) -> (RouteIds, Option<Vec<usize>>),
) {
    let registry = Registry::builtin();
    let mut routes: Vec<(u128, String)> =
        (1..=30).map(|id| (id, format!("/p{}", id % 7))).collect();
    let config = |routes: &[(u128, String)]| {
        let routes: Vec<(u128, &str)> = routes.iter().map(|(id, p)| (*id, p.as_str())).collect();
        routes_config(&routes)
    };
    let mut live = Snapshot::compile(config(&routes), &registry).unwrap();
    for step in 0..24usize {
        let (told, replaced) = change(step, &mut routes);
        let next = Snapshot::compile_patched_at(
            config(&routes),
            &registry,
            &live,
            &told,
            replaced.as_deref(),
        )
        .unwrap();
        let fresh = Snapshot::compile(config(&routes), &registry).unwrap();
        let paths = (0..7)
            .map(|i| format!("/p{i}"))
            .chain((0..24).map(|i| format!("/n{i}/x")));
        for path in paths {
            assert_eq!(
                routed(&next, &path),
                routed(&fresh, &path),
                "step {step}: {path}"
            );
        }
        live = next;
    }
}
