//! DB mode's batched store writes: a burst of applied changes is live at once and reaches the store in
//! the next batch, and what is queued at shutdown is written by [`Loader::flush_store`].

use crate::dbnode::spare;
use crate::loader::tests::live_and_stored;
use crate::loader::{EntityChange, Loader, Patch};
use sluice_model::declarative::{self, kinds::Kind};
use sluice_model::{records, Config};
use sluice_store::Store;
use std::sync::Arc;
use std::time::Duration;

/// A loader on a fresh store, serving `n` routes `/r{i}` under one service.
fn loader(dir: &tempfile::TempDir, n: usize) -> Loader {
    let store = Store::open(dir.path(), 64 << 20).unwrap();
    let loader = Loader::new(Arc::new(sluice_plugins::Registry::builtin()), store);
    let mut yaml = String::from(
        "_format_version: \"3.0\"\nservices:\n- name: s\n  url: http://127.0.0.1:9\n  routes:\n",
    );
    for i in 0..n {
        yaml.push_str(&format!("  - name: r{i}\n    paths: [/r{i}]\n"));
    }
    let doc = declarative::to_document(&yaml).unwrap();
    loader.load_doc(doc, false, true).unwrap();
    loader
}

/// The route named `name` of `config` with `paths`, as DB mode's change of it.
fn route_change(config: &Config, name: &str, paths: &[&str]) -> EntityChange {
    let mut change = None;
    records::for_each_record(config, |r| {
        let mut body: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
        if r.kind == "routes" && body["name"] == name {
            body["paths"] = serde_json::json!(paths);
            change = Some(EntityChange {
                kind: Kind::Route,
                id: r.id,
                body: Some(serde_json::to_vec(&body).unwrap()),
            });
        }
    });
    change.unwrap()
}

/// Applies a burst of DB-mode changes: routes `r0`..`r{n-1}` changed twice each, then `r{n-1}` deleted.
fn burst(loader: &Loader, n: usize) {
    for round in 0..2 {
        for i in 0..n {
            let path = format!("/x{round}/{i}");
            apply(loader, &format!("h{round}-{i}"), |live| {
                vec![route_change(live, &format!("r{i}"), &[&path])]
            });
        }
    }
    apply(loader, "gone", |live| {
        let last = route_change(live, &format!("r{}", n - 1), &[]);
        vec![EntityChange { body: None, ..last }]
    });
}

/// Applies the changes `made` makes of the live config, as a DB-mode node does.
fn apply(loader: &Loader, hash: &str, made: impl FnOnce(&Config) -> Vec<EntityChange>) {
    let live = loader.snapshot().load().config().clone();
    let changes = made(&live);
    let (mut config, in_place) = spare::next(None, &live, 0, &changes).unwrap();
    config.hash = hash.to_string();
    let patch = Patch {
        base: &live,
        changes: &changes,
        routes_in_place: in_place.as_deref(),
    };
    loader.apply(config, Some(patch)).unwrap();
}

#[test]
fn a_burst_of_changes_reaches_the_store_in_the_next_batch() {
    let dir = tempfile::tempdir().unwrap();
    let loader = loader(&dir, 20);
    loader.defer_change_commits(Duration::from_millis(100));
    burst(&loader, 20);
    let (live, _) = live_and_stored(&loader);
    assert_eq!(live.routes.len(), 19);
    assert_eq!(live.routes[0].paths, Some(vec!["/x1/0".to_string()]));
    let mut stored = None;
    for _ in 0..50 {
        std::thread::sleep(Duration::from_millis(100));
        let (live, now) = live_and_stored(&loader);
        if now == live {
            stored = Some(now);
            break;
        }
    }
    assert_eq!(
        stored.as_ref(),
        Some(&live),
        "the batch never reached the store"
    );
    assert_eq!(
        loader.store.current_hash().unwrap().as_deref(),
        Some("gone")
    );
}

#[test]
fn changes_queued_at_shutdown_are_written_by_the_flush() {
    let dir = tempfile::tempdir().unwrap();
    let loader = loader(&dir, 10);
    let (before, _) = live_and_stored(&loader);
    // No batch is due during the test: only the flush writes.
    loader.defer_change_commits(Duration::from_secs(3600));
    burst(&loader, 10);
    let (live, stored) = live_and_stored(&loader);
    assert_ne!(live, before);
    assert_eq!(
        stored, before,
        "a change reached the store before its batch"
    );
    loader.flush_store();
    let (live, stored) = live_and_stored(&loader);
    assert_eq!(stored, live);
    // A whole config committed after queued changes is what the store keeps.
    loader.defer_change_commits(Duration::from_secs(3600));
    burst(&loader, 3);
    let whole = loader.snapshot().load().config().as_ref().clone();
    loader.apply(whole, None).unwrap();
    let (live, stored) = live_and_stored(&loader);
    assert_eq!(stored, live);
}
