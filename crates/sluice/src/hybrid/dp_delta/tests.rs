use super::*;
use crate::hybrid::rehash;
use crate::hybrid::testing::{live_paths, loader, parsed};
use sluice_cluster::hash::config_hashes;
use sluice_model::declarative;

/// The delta a CP sends from `old` (version `base`) to `new` (`version`), with its digest.
fn delta(base: u64, version: u64, old: &[&str], new: &[&str]) -> Delta {
    let new = parsed(new);
    let hashes = config_hashes(&declarative::export(&new));
    Delta {
        base_version: base,
        version,
        config_hash: hashes.config.clone(),
        hashes,
        digest: Some(rehash::full(&new).digest()),
        changes: crate::hybrid::diff::diff(&parsed(old), &new).unwrap(),
    }
}

/// A loader serving `paths` (its store in the returned directory) and the delta state of a link that got
/// them as the whole config at version 1.
fn following(paths: &[&str]) -> (tempfile::TempDir, Arc<Loader>, DeltaSync) {
    let dir = tempfile::tempdir().unwrap();
    let loader = loader(dir.path(), paths);
    let mut sync = DeltaSync::default();
    sync.full(Some(1), &loader);
    (dir, loader, sync)
}

/// Starts the due check and waits for its result.
async fn check_now(sync: &mut DeltaSync, loader: &Loader) -> Result<(), (Resync, Option<String>)> {
    sync.start_check(loader);
    sync.checked().await
}

#[tokio::test]
async fn deltas_in_sequence_go_live_with_the_control_planes_hash() {
    let (_dir, loader, mut sync) = following(&["/a", "/b"]);

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
async fn a_gap_asks_once_for_the_whole_config() {
    let (_dir, loader, mut sync) = following(&["/a"]);

    let gap = delta(3, 4, &["/a"], &["/a", "/b"]);
    match sync.apply(&loader, gap).await {
        Outcome::AskFull(r) => assert_eq!((r.version, r.reason.contains("gap")), (Some(1), true)),
        _ => panic!("no full sync asked"),
    }
    // Until the whole config comes, deltas are dropped, even one that would apply: one request only.
    let next = delta(1, 2, &["/a"], &["/a", "/b"]);
    assert!(matches!(sync.apply(&loader, next).await, Outcome::Skipped));
    assert_eq!(live_paths(&loader), ["/a"]);
    assert_eq!(sync.check_due(), None);
}

#[tokio::test]
async fn a_wrong_hash_is_found_by_the_check_which_asks_once_for_the_whole_config() {
    // From a CP that sends its digest, and from one that predates it (Kong's hash alone).
    for digest in [Some("0123456789abcdef0123456789abcdef".to_owned()), None] {
        wrong_config_asks_for_the_whole(digest).await;
    }
}

async fn wrong_config_asks_for_the_whole(digest: Option<String>) {
    let (_dir, loader, mut sync) = following(&["/a"]);
    let mut wrong = delta(1, 2, &["/a"], &["/a", "/b"]);
    wrong.config_hash = "0123456789abcdef0123456789abcdef".into();
    wrong.digest = digest;
    // The delta goes live on its version; the check finds that the result is not the CP's config.
    assert!(matches!(
        sync.apply(&loader, wrong).await,
        Outcome::Applied(_)
    ));
    assert_eq!(live_paths(&loader), ["/a", "/b"]);
    let (resync, found) = check_now(&mut sync, &loader).await.unwrap_err();
    assert!(resync.reason.contains("hash mismatch"), "{}", resync.reason);
    assert_eq!(resync.version, Some(2));
    // The DP reports the hash of what it serves (so the CP's whole config is not taken for the same).
    let served = config_hashes(&declarative::export(&parsed(&["/a", "/b"]))).config;
    assert_eq!(found, Some(served));
    let next = delta(2, 3, &["/a", "/b"], &["/a", "/b", "/c"]);
    assert!(matches!(sync.apply(&loader, next).await, Outcome::Skipped));
    assert_eq!(sync.check_due(), None);
}

#[tokio::test]
async fn one_check_covers_a_burst_and_checks_come_at_most_once_a_second() {
    let (_dir, loader, mut sync) = following(&["/a"]);
    // After a full config, the parts of the live config are computed in the background.
    assert!(matches!(sync.check.base, Some(check::Base::Hashing(_))));
    let before = tokio::time::Instant::now();
    let first = delta(1, 2, &["/a"], &["/a", "/b"]);
    assert!(matches!(
        sync.apply(&loader, first).await,
        Outcome::Applied(_)
    ));
    let due = sync.check_due().expect("a check is due");
    // A delta that comes before the check does not put it off (a fast stream is still checked).
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    let second = delta(2, 3, &["/a", "/b"], &["/a", "/b", "/c"]);
    assert!(matches!(
        sync.apply(&loader, second).await,
        Outcome::Applied(_)
    ));
    assert_eq!(sync.check_due(), Some(due));
    assert!(due >= before + check::QUIET, "{due:?}");
    assert!(due < before + check::EVERY, "{due:?}");
    assert_eq!(sync.check.deltas, 2);
    check_now(&mut sync, &loader).await.unwrap();
    assert_eq!((sync.check_due(), sync.check.deltas), (None, 0));
    // The parts kept are the live config's.
    let live = loader.snapshot().load().config().clone();
    match &sync.check.base {
        Some(check::Base::Ready(parts)) => assert_eq!(*parts, rehash::full(&live)),
        _ => panic!("no parts kept"),
    }
    // The next delta's check waits a second from the last one.
    let after = tokio::time::Instant::now();
    let third = delta(3, 4, &["/a", "/b", "/c"], &["/a", "/c"]);
    assert!(matches!(
        sync.apply(&loader, third).await,
        Outcome::Applied(_)
    ));
    assert!(sync.check_due().unwrap() >= after + check::EVERY - check::QUIET);
    check_now(&mut sync, &loader).await.unwrap();
    assert_eq!(live_paths(&loader), ["/a", "/c"]);
}

#[tokio::test]
async fn a_partial_miss_is_rehashed_whole_before_it_counts() {
    let (_dir, loader, mut sync) = following(&["/a"]);
    // Parts that are wrong in a part the delta does not touch (as after a change nobody named): the
    // partial hash misses, the whole config's matches, and no full sync is asked.
    let live = loader.snapshot().load().config().clone();
    let mut stale = rehash::full(&live);
    stale.rest = sluice_cluster::EMPTY_CONFIG_HASH.into();
    sync.check.base = Some(check::Base::Ready(stale));
    let first = delta(1, 2, &["/a"], &["/a", "/b"]);
    assert!(matches!(
        sync.apply(&loader, first).await,
        Outcome::Applied(_)
    ));
    check_now(&mut sync, &loader).await.unwrap();
    let live = loader.snapshot().load().config().clone();
    match &sync.check.base {
        Some(check::Base::Ready(parts)) => assert_eq!(*parts, rehash::full(&live)),
        _ => panic!("no parts kept"),
    }
}

#[tokio::test]
async fn deltas_go_live_while_a_check_waits_for_the_cpu() {
    let (_dir, loader, mut sync) = following(&["/a"]);
    // A check that cannot finish yet: the parts it starts from are still being hashed, as on a DP
    // whose CPU other work keeps busy (the hashing runs at the idle policy).
    let (release, hold) = tokio::sync::oneshot::channel::<()>();
    let live = loader.snapshot().load().config().clone();
    sync.check.base = Some(check::Base::Hashing(tokio::spawn(async move {
        let _ = hold.await;
        Ok(rehash::full(&live))
    })));
    let first = delta(1, 2, &["/a"], &["/a", "/b"]);
    assert!(matches!(
        sync.apply(&loader, first).await,
        Outcome::Applied(_)
    ));
    sync.start_check(&loader);
    assert_eq!(sync.check_due(), None, "one check at a time");
    // A delta that comes while the check waits goes live at once.
    let second = delta(2, 3, &["/a", "/b"], &["/a", "/b", "/c"]);
    let wait = std::time::Duration::from_secs(5);
    let applied = tokio::time::timeout(wait, sync.apply(&loader, second))
        .await
        .expect("the delta waited for the check");
    assert!(matches!(applied, Outcome::Applied(_)));
    assert_eq!(live_paths(&loader), ["/a", "/b", "/c"]);
    // Once it gets the CPU, the check verifies the config it started on (the first delta's); the
    // second delta is the next check's, a second later.
    release.send(()).unwrap();
    let before = tokio::time::Instant::now();
    tokio::time::timeout(wait, sync.checked())
        .await
        .expect("the check ended")
        .unwrap();
    assert_eq!(sync.check.deltas, 1);
    assert!(sync.check_due().expect("the next check is due") >= before + check::EVERY);
    check_now(&mut sync, &loader).await.unwrap();
    assert_eq!(sync.check.deltas, 0);
}
