//! Reloads of a whole config: entities unchanged since the last load are copied, not validated again, and
//! the store, written with only what changed, holds exactly the live config after each one.

use super::*;

/// Routes named by `routes` (`/x` for route `x`) under one service, each with two plugins; one consumer
/// with a key.
fn doc(routes: &[&str]) -> serde_json::Value {
    let mut yaml = String::from(
        "_format_version: \"3.0\"\nservices:\n- name: s\n  url: http://127.0.0.1:9\n  routes:\n",
    );
    for r in routes {
        yaml.push_str(&format!(
            "  - name: {r}\n    paths: [/{r}]\n    plugins:\n    - name: key-auth\n    \
             - name: request-termination\n      config: {{status_code: 200, message: {r}}}\n"
        ));
    }
    yaml.push_str("consumers:\n- username: c\n  keyauth_credentials:\n  - key: k\n");
    declarative::to_document(&yaml).unwrap()
}

/// The live config, and the config the store holds read back.
pub(super) fn live_and_stored(loader: &Loader) -> (Config, Config) {
    let live = loader.snapshot().load().config().as_ref().clone();
    let stored = loader.store.load().unwrap().unwrap();
    let stored =
        declarative::from_store(stored.format_version, stored.hash, stored.entities).unwrap();
    (live, stored)
}

fn load(loader: &Loader, routes: &[&str]) -> Result<u64, LoadError> {
    loader.load_doc(doc(routes), false, true)?;
    let (live, stored) = live_and_stored(loader);
    assert_eq!(stored, live, "after loading {routes:?}");
    Ok(loader.stats.last_copied.load(Ordering::Relaxed))
}

#[test]
fn reloads_copy_what_did_not_change_and_the_store_follows() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), 64 << 20).unwrap();
    let loader = Loader::new(Arc::new(sluice_plugins::Registry::builtin()), store);
    // 1 service, 3 routes with 2 plugins each, 1 consumer with 1 credential: 12 entities.
    assert_eq!(load(&loader, &["a", "b", "c"]).unwrap(), 0);
    assert_eq!(load(&loader, &["a", "b", "c"]).unwrap(), 12);
    // Route b's path: b and its plugins' ids and inputs stay, b alone is validated again.
    let changed = doc(&["a", "b", "c"])
        .to_string()
        .replace("\"/b\"", "\"/b2\"");
    let changed = declarative::to_document(&changed).unwrap();
    loader.load_doc(changed, false, true).unwrap();
    let (live, stored) = live_and_stored(&loader);
    assert_eq!(stored, live);
    assert_eq!(live.routes[1].paths, Some(vec!["/b2".to_string()]));
    assert_eq!(loader.stats.last_copied.load(Ordering::Relaxed), 11);
    // Back, removed, appended, moved, inserted: the store keeps the live order every time. (A plugin
    // without a name takes its id from its position: c's plugins are new ones once c moves up.)
    assert_eq!(load(&loader, &["a", "b", "c"]).unwrap(), 11);
    assert_eq!(load(&loader, &["a", "c"]).unwrap(), 7);
    assert_eq!(load(&loader, &["a", "c", "d"]).unwrap(), 9);
    assert!(load(&loader, &["c", "a", "d"]).unwrap() > 0);
    assert!(load(&loader, &["c", "b", "a", "d"]).unwrap() > 0);
}

/// [`doc`] with the routes at the top level, naming their service `s`; without the service when asked.
fn top_level(routes: &[&str], with_service: bool) -> serde_json::Value {
    let mut d = doc(routes);
    d["routes"] = d["services"][0]["routes"].take();
    for r in d["routes"].as_array_mut().unwrap() {
        r["service"] = "s".into();
    }
    if !with_service {
        d.as_object_mut().unwrap().remove("services");
    }
    d
}

#[test]
fn a_reused_route_whose_service_is_gone_is_an_error_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), 64 << 20).unwrap();
    let loader = Loader::new(Arc::new(sluice_plugins::Registry::builtin()), store);
    let routes = ["a", "b"];
    loader
        .load_doc(top_level(&routes, true), false, true)
        .unwrap();
    loader
        .load_doc(top_level(&routes, true), false, true)
        .unwrap();
    // 1 service, 2 routes with 2 plugins each, 1 consumer with 1 credential.
    assert_eq!(loader.stats.last_copied.load(Ordering::Relaxed), 9);
    let before = live_and_stored(&loader).0;
    let Err(LoadError::Invalid(errors)) = loader.load_doc(top_level(&routes, false), false, true)
    else {
        panic!("expected errors");
    };
    assert_eq!(errors.entities.len(), 2, "{errors}");
    assert!(errors.to_string().contains("could not find service 's'"));
    let (live, stored) = live_and_stored(&loader);
    assert_eq!((&live, &stored), (&before, &before));
    // What the next load may reuse is still the live config's.
    loader
        .load_doc(top_level(&routes, true), false, true)
        .unwrap();
    assert_eq!(loader.stats.last_copied.load(Ordering::Relaxed), 9);
}

/// A request that outlives a reload only lets go of the old snapshot: the loader frees it, not the
/// request's worker (once a sweep finds it unheld).
#[tokio::test]
async fn a_replaced_snapshot_is_freed_by_the_loader_not_by_the_last_request() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), 64 << 20).unwrap();
    let loader = Loader::new(Arc::new(sluice_plugins::Registry::builtin()), store);
    loader.load_doc(doc(&["a"]), false, true).unwrap();
    let request = loader.snapshot().load_full();
    let old = Arc::downgrade(&request);
    loader.load_doc(doc(&["a", "b"]), false, true).unwrap();
    assert_eq!(loader.retired.len(), 1);
    drop(request);
    assert!(
        old.upgrade().is_some(),
        "the request's drop freed the snapshot"
    );
    for _ in 0..100 {
        if old.strong_count() == 0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert_eq!(old.strong_count(), 0, "never freed");
    assert_eq!(loader.retired.len(), 0);
    // A snapshot no request holds is freed at once.
    let config = loader.snapshot().load().config().as_ref().clone();
    loader.apply(config, None).unwrap();
    assert_eq!(loader.retired.len(), 0);
}
