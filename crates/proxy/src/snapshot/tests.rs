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
