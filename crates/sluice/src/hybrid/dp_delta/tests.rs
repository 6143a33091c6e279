use super::*;
use crate::hybrid::testing::{live_paths, loader, parsed};
use sluice_cluster::hash::config_hashes;
use sluice_model::declarative;

/// The delta a CP sends from `old` (version `base`) to `new` (`version`).
fn delta(base: u64, version: u64, old: &[&str], new: &[&str]) -> Delta {
    let new = parsed(new);
    let hashes = config_hashes(&declarative::export(&new));
    Delta {
        base_version: base,
        version,
        config_hash: hashes.config.clone(),
        hashes,
        changes: crate::hybrid::diff::diff(&parsed(old), &new).unwrap(),
    }
}

#[tokio::test]
async fn deltas_in_sequence_go_live_with_the_control_planes_hash() {
    let dir = tempfile::tempdir().unwrap();
    let loader = loader(dir.path(), &["/a", "/b"]);
    let mut sync = DeltaSync::default();
    sync.full(Some(1), &loader);

    let first = delta(1, 2, &["/a", "/b"], &["/a", "/b", "/c"]);
    let want = first.config_hash.clone();
    assert_eq!(first.changes.len(), 1);
    match sync.apply(&loader, first).await {
        Outcome::Applied(hash) => assert_eq!(hash, want),
        _ => panic!("not applied"),
    }
    assert_eq!(live_paths(&loader), ["/a", "/b", "/c"]);
    // The next one is built on the spare (the config before the live one).
    let second = delta(2, 3, &["/a", "/b", "/c"], &["/a", "/c"]);
    assert!(matches!(
        sync.apply(&loader, second).await,
        Outcome::Applied(_)
    ));
    assert_eq!(live_paths(&loader), ["/a", "/c"]);
    assert_eq!(sync.version, Some(3));
    // Replayed: skipped.
    let replay = delta(2, 3, &["/a", "/b", "/c"], &["/a", "/c"]);
    assert!(matches!(
        sync.apply(&loader, replay).await,
        Outcome::Skipped
    ));
}

#[tokio::test]
async fn a_gap_or_a_wrong_hash_asks_once_for_the_whole_config() {
    let dir = tempfile::tempdir().unwrap();
    let loader = loader(dir.path(), &["/a"]);
    let mut sync = DeltaSync::default();
    sync.full(Some(1), &loader);

    let gap = delta(3, 4, &["/a"], &["/a", "/b"]);
    match sync.apply(&loader, gap).await {
        Outcome::AskFull(r) => assert_eq!((r.version, r.reason.contains("gap")), (Some(1), true)),
        _ => panic!("no full sync asked"),
    }
    // Until the whole config comes, deltas are dropped, even one that would apply: one request only.
    let next = delta(1, 2, &["/a"], &["/a", "/b"]);
    assert!(matches!(sync.apply(&loader, next).await, Outcome::Skipped));
    assert_eq!(live_paths(&loader), ["/a"]);

    sync.full(Some(1), &loader);
    let mut wrong = delta(1, 2, &["/a"], &["/a", "/b"]);
    wrong.config_hash = "0123456789abcdef0123456789abcdef".into();
    match sync.apply(&loader, wrong).await {
        Outcome::AskFull(r) => assert!(r.reason.contains("hash mismatch"), "{}", r.reason),
        _ => panic!("no full sync asked"),
    }
    // A config that differs from the control plane's never went live.
    assert_eq!(live_paths(&loader), ["/a"]);
}

/// The parts `sync` holds for the live config of `loader` (waiting for them if they are being computed).
async fn kept(sync: &mut DeltaSync, loader: &Loader) -> (LiveParts, Option<Hashed>) {
    let live = loader.snapshot().load().config().clone();
    let parts = sync.parts.take().unwrap().get().await.unwrap();
    let of_live = LiveParts {
        config: parts.config.clone(),
        parts: parts.parts.clone(),
    }
    .of(&live);
    (parts, of_live)
}

#[tokio::test]
async fn the_live_configs_parts_are_kept_and_a_partial_miss_is_rehashed_whole() {
    let dir = tempfile::tempdir().unwrap();
    let loader = loader(dir.path(), &["/a"]);
    let mut sync = DeltaSync::default();
    // After a full config, the parts are computed in the background.
    sync.full(Some(1), &loader);
    assert!(matches!(sync.parts, Some(Known::Hashing(_))));
    let live = loader.snapshot().load().config().clone();
    let (parts, of_live) = kept(&mut sync, &loader).await;
    assert_eq!(of_live, Some(rehash::full(&live)));
    sync.parts = Some(Known::Ready(parts));
    let first = delta(1, 2, &["/a"], &["/a", "/b"]);
    assert!(matches!(
        sync.apply(&loader, first).await,
        Outcome::Applied(_)
    ));
    let live = loader.snapshot().load().config().clone();
    let (parts, of_live) = kept(&mut sync, &loader).await;
    assert_eq!(of_live, Some(rehash::full(&live)));
    // Parts of another config are not used for the live one.
    let other = Arc::new(parsed(&["/x"]));
    let foreign = LiveParts {
        config: Arc::downgrade(&other),
        parts: rehash::full(&other),
    };
    assert_eq!(foreign.of(&live), None);

    // Parts that are wrong in a part the next delta does not touch (as after a change nobody named):
    // the partial hash misses, the whole config's matches, and the delta goes live without a resync.
    sync.parts = Some(Known::Ready(LiveParts {
        config: parts.config,
        parts: {
            let mut stale = rehash::full(&live);
            stale.parts.rest = sluice_cluster::EMPTY_CONFIG_HASH.into();
            stale
        },
    }));
    let second = delta(2, 3, &["/a", "/b"], &["/a", "/b", "/c"]);
    assert!(matches!(
        sync.apply(&loader, second).await,
        Outcome::Applied(_)
    ));
    assert_eq!(live_paths(&loader), ["/a", "/b", "/c"]);
    let live = loader.snapshot().load().config().clone();
    assert_eq!(kept(&mut sync, &loader).await.1, Some(rehash::full(&live)));
}
