//! Sluice's deltas between Sluice nodes (issue 19, point 4), through the real binary on loopback:
//! - a Sluice DP under a Sluice CP gets the whole config once, then each change as a delta of the changed
//!   entities, applied incrementally and stored (it serves them after a stop and a start without the
//!   CP);
//! - a DP that missed changes while it was down gets the whole config once, then deltas again;
//! - a DB-less CP's config without timestamps (stamped at each load) changes only what changed;
//! - a DP whose link broke names what it holds when it reconnects: it gets nothing when that is current,
//!   and the changes it missed as deltas;
//! - a peer that does not offer deltas (Kong's DP, played by `peer.py`) gets Kong's full pushes, unchanged,
//!   while one that offers them gets deltas, and the whole config when it asks;
//! - a Sluice DP under a CP that sends it a gap, or a delta with the wrong hash (found by the DP's check
//!   within a second), asks for the whole config exactly once, and then serves what the CP has.

#[path = "hybrid_support/cluster.rs"]
mod cluster;
#[path = "hybrid_support/peer.rs"]
mod peer;

use cluster::*;
use peer::Peer;
use serde_json::Value;
use sluice_cluster::delta::{Change, Delta, Op, SluiceFull};
use sluice_cluster::frames::cp::Reconfigure;
use sluice_testkit::{self_signed, EchoUpstream, Gateway, TcpRelay};
use std::time::Duration;

const FULL_APPLIED: &str = "configuration from the control plane applied";
const DELTA_APPLIED: &str = "delta from the control plane applied";

fn count(gw: &Gateway, line: &str) -> usize {
    plain_log(gw).matches(line).count()
}

/// A CP (DB-less, log level debug so that it logs what it sends) serving `paths`, and the cert.
fn cluster(
    up: &EchoUpstream,
    dir: &std::path::Path,
    paths: &[&str],
) -> (Gateway, u16, (String, String)) {
    let cert = cert_files(dir, &self_signed(&["kong_clustering"]));
    let debug = [("SLUICE_LOG_LEVEL", "debug")];
    let cp = control_plane_with(&cert, &config(up.port(), paths), &debug);
    let port = cp.cluster_port();
    (cp, port, cert)
}

/// The sizes of the delta frames the CP logged (`deltas sent ... bytes=N`).
fn delta_bytes(cp: &Gateway) -> Vec<usize> {
    plain_log(cp)
        .lines()
        .filter(|l| l.contains("deltas sent"))
        .filter_map(|l| {
            l.split("bytes=")
                .nth(1)?
                .split_whitespace()
                .next()?
                .parse()
                .ok()
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_reaches_a_sluice_data_plane_as_a_delta_and_is_stored() {
    let up = EchoUpstream::start();
    let dir = tempfile::tempdir().unwrap();
    let (mut cp, port, cert) = cluster(&up, dir.path(), &["/a", "/b"]);
    let mut dp = data_plane(port, &cert);
    until(&dp, "/a", 200, Duration::from_secs(10)).await;

    post_config(&cp, config(up.port(), &["/a", "/b", "/c"])).await;
    until(&dp, "/c", 200, Duration::from_secs(5)).await;
    post_config(&cp, config(up.port(), &["/a", "/c"])).await;
    until(&dp, "/b", 404, Duration::from_secs(5)).await;

    let log = plain_log(&dp);
    assert_eq!(count(&dp, FULL_APPLIED), 1, "{log}");
    assert_eq!(count(&dp, DELTA_APPLIED), 2, "{log}");
    assert_eq!(
        log.matches("changes=1 ").count(),
        2,
        "one route each time:\n{log}"
    );
    let sent = delta_bytes(&cp);
    assert_eq!(sent.len(), 2, "{}", cp.log());
    assert!(sent.iter().all(|b| *b < 1000), "{sent:?}");
    // The DP checks what it built against the CP's digest, rehashing only what the deltas named.
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while !plain_log(&dp).contains("rehashed=Partial against=\"digest\"") {
        assert!(std::time::Instant::now() < deadline, "{}", dp.log());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        !plain_log(&dp).contains("asking the control plane"),
        "{}",
        dp.log()
    );

    // Deltas reach the store in batches, and a clean stop writes the last one: without the CP, the
    // restarted DP serves the last delta's config.
    cp.kill();
    dp.signal("TERM");
    assert!(dp
        .wait_exit(Duration::from_secs(10))
        .is_some_and(|s| s.success()));
    dp.restart();
    until(&dp, "/c", 200, Duration::from_secs(5)).await;
    assert_eq!(status(&dp, "/b").await, 404);
    assert!(dp.log().contains("configuration restored from the store"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_config_without_timestamps_sends_only_what_changed() {
    let up = EchoUpstream::start();
    let dir = tempfile::tempdir().unwrap();
    let unstamped = |paths: &[&str]| {
        config(up.port(), paths)
            .replace(", created_at: 1700000000, updated_at: 1700000000", "")
            .replace("  created_at: 1700000000\n  updated_at: 1700000000\n", "")
    };
    assert!(!unstamped(&["/a"]).contains("created_at"));
    let cert = cert_files(dir.path(), &self_signed(&["kong_clustering"]));
    let debug = [("SLUICE_LOG_LEVEL", "debug")];
    let cp = control_plane_with(&cert, &unstamped(&["/a", "/b"]), &debug);
    let dp = data_plane(cp.cluster_port(), &cert);
    until(&dp, "/a", 200, Duration::from_secs(10)).await;
    // The next load's stamps are a second later than the first's.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    post_config(&cp, unstamped(&["/a", "/b", "/c"])).await;
    until(&dp, "/c", 200, Duration::from_secs(5)).await;
    let log = plain_log(&dp);
    assert_eq!(count(&dp, DELTA_APPLIED), 1, "{log}");
    assert_eq!(
        log.matches("changes=1 ").count(),
        1,
        "the new route only:\n{log}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reconnecting_data_plane_gets_only_what_it_missed() {
    let up = EchoUpstream::start();
    let dir = tempfile::tempdir().unwrap();
    let (cp, port, cert) = cluster(&up, dir.path(), &["/a"]);
    let link = TcpRelay::to("127.0.0.1".into(), port);
    let dp = data_plane(link.port, &cert);
    until(&dp, "/a", 200, Duration::from_secs(10)).await;
    let reconnects = |n: usize| {
        let dp = &dp;
        async move {
            let deadline = std::time::Instant::now() + Duration::from_secs(30);
            while plain_log(dp)
                .matches("connected to the control plane")
                .count()
                < n
            {
                assert!(std::time::Instant::now() < deadline, "{}", dp.log());
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    };
    // The link breaks and comes back: the DP holds the CP's current config, and is sent nothing.
    link.cut();
    link.restore();
    reconnects(2).await;
    let current = "data plane holds the current configuration";
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !plain_log(&cp).contains(current) {
        assert!(std::time::Instant::now() < deadline, "{}", cp.log());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // It breaks again and a route is added meanwhile: the DP gets that change as a delta.
    link.cut();
    post_config(&cp, config(up.port(), &["/a", "/b"])).await;
    link.restore();
    until(&dp, "/b", 200, Duration::from_secs(30)).await;
    assert_eq!(count(&dp, FULL_APPLIED), 1, "{}", dp.log());
    assert_eq!(count(&dp, DELTA_APPLIED), 1, "{}", dp.log());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_data_plane_that_missed_changes_gets_the_whole_config_once_then_deltas() {
    let up = EchoUpstream::start();
    let dir = tempfile::tempdir().unwrap();
    let (cp, port, cert) = cluster(&up, dir.path(), &["/a"]);
    let mut dp = data_plane(port, &cert);
    until(&dp, "/a", 200, Duration::from_secs(10)).await;

    dp.kill();
    post_config(&cp, config(up.port(), &["/a", "/b"])).await;
    post_config(&cp, config(up.port(), &["/a", "/b", "/c"])).await;
    dp.restart(); // serves its store (/a) until the CP's config comes
    until(&dp, "/c", 200, Duration::from_secs(15)).await;
    assert_eq!(count(&dp, FULL_APPLIED), 1, "{}", dp.log());
    assert_eq!(count(&dp, DELTA_APPLIED), 0, "{}", dp.log());

    post_config(&cp, config(up.port(), &["/a", "/b", "/c", "/d"])).await;
    until(&dp, "/d", 200, Duration::from_secs(5)).await;
    assert_eq!(count(&dp, FULL_APPLIED), 1, "{}", dp.log());
    assert_eq!(count(&dp, DELTA_APPLIED), 1, "{}", dp.log());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kongs_data_planes_get_full_pushes_and_sluices_get_deltas() {
    let up = EchoUpstream::start();
    let dir = tempfile::tempdir().unwrap();
    let (cp, port, cert) = cluster(&up, dir.path(), &["/a"]);
    let mut kong = Peer::data_plane(port, &cert, false);
    let mut sluice = Peer::data_plane(port, &cert, true);
    let wait = Duration::from_secs(10);

    let (_, first) = kong.frame(wait);
    assert_eq!(first["type"], "reconfigure", "{first}");
    assert!(first.get("sluice").is_none(), "{first}");
    let (_, first) = sluice.frame(wait);
    assert_eq!(first["type"], "reconfigure", "{first}");
    let version = first["sluice"]["version"]
        .as_u64()
        .expect("a delta version");

    post_config(&cp, config(up.port(), &["/a", "/b"])).await;
    let (_, full) = kong.frame(wait);
    assert_eq!(full["type"], "reconfigure", "{full}");
    assert_eq!(full["config_table"]["routes"], 2);
    assert!(full.get("sluice").is_none(), "{full}");
    let (bytes, delta) = sluice.frame(wait);
    assert_eq!(delta["type"], "sluice_delta", "{delta}");
    assert_eq!(delta["base_version"], version);
    assert_eq!(delta["version"], version + 1);
    assert_eq!(delta["config_hash"], full["config_hash"]);
    assert_eq!(
        delta["changes"].as_array().map(Vec::len),
        Some(1),
        "{delta}"
    );
    assert_eq!(delta["changes"][0]["entity"]["name"], "rb");
    assert!(bytes < 1000, "{bytes} bytes");

    // Asked, the CP sends the whole config again, at the current version.
    sluice.resync();
    let (_, again) = sluice.frame(wait);
    assert_eq!(again["type"], "reconfigure", "{again}");
    assert_eq!(again["sluice"]["version"], version + 1);
    assert_eq!(again["config_table"]["routes"], 2);
    assert!(cp.log().contains("data plane asked for a full sync"));
    assert!(kong.maybe_frame(Duration::from_millis(300)).is_none());
}

/// The flat export of `config(up, paths)`, as a CP sends it.
fn table(up: u16, paths: &[&str]) -> Value {
    let registry = sluice_plugins::Registry::builtin();
    let parsed = sluice_model::declarative::parse(&config(up, paths), &registry).unwrap();
    sluice_model::declarative::export(&parsed)
}

fn full(table: Value, version: u64) -> Vec<u8> {
    let mut reconfigure = Reconfigure::new(table, 0.0);
    reconfigure.sluice = Some(SluiceFull { version });
    reconfigure.encode()
}

/// The delta from `old` to `new` (tables that differ only in routes added at the end).
fn delta(base: u64, old: &Value, new: &Value) -> Delta {
    let known: Vec<&Value> = old["routes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| &r["id"])
        .collect();
    let changes = new["routes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| !known.contains(&&r["id"]))
        .map(|r| Change {
            kind: "routes".into(),
            id: r["id"].as_str().unwrap().into(),
            op: Op::Upsert { entity: r.clone() },
        })
        .collect();
    let hashes = sluice_cluster::hash::config_hashes(new);
    Delta {
        base_version: base,
        version: base + 1,
        config_hash: hashes.config.clone(),
        hashes,
        // As a CP from before Sluice's digest: the DP checks Kong's hash.
        digest: None,
        changes,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gap_or_a_wrong_hash_makes_a_data_plane_ask_once_for_the_whole_config() {
    let up = EchoUpstream::start();
    let dir = tempfile::tempdir().unwrap();
    let cert = cert_files(dir.path(), &self_signed(&["kong_clustering"]));
    let (mut cp, port) = Peer::control_plane(&cert);
    let dp = data_plane(port, &cert);
    let wait = Duration::from_secs(10);
    let hello = cp.next(wait);
    assert_eq!(
        hello["hello"]["sluice"]["capabilities"][0], "delta.v1",
        "{hello}"
    );

    let (a, ab, abc) = (
        table(up.port(), &["/a"]),
        table(up.port(), &["/a", "/b"]),
        table(up.port(), &["/a", "/b", "/c"]),
    );
    cp.send(&full(a.clone(), 10));
    until(&dp, "/a", 200, wait).await;

    // A gap (it holds 10): one request for the whole config, however many deltas follow.
    cp.send(&delta(12, &a, &ab).encode());
    let (_, asked) = cp.frame(wait);
    assert_eq!(asked["type"], "sluice_resync", "{asked}");
    assert_eq!(asked["version"], 10);
    assert!(asked["reason"].as_str().unwrap().contains("gap"), "{asked}");
    cp.send(&delta(13, &ab, &abc).encode());
    assert_eq!(cp.maybe_frame(Duration::from_millis(500)), None);
    assert_eq!(status(&dp, "/b").await, 404);

    // The whole config converges it; deltas apply again.
    cp.send(&full(ab.clone(), 14));
    until(&dp, "/b", 200, wait).await;
    cp.send(&delta(14, &ab, &abc).encode());
    until(&dp, "/c", 200, wait).await;
    assert_eq!(count(&dp, DELTA_APPLIED), 1, "{}", dp.log());

    // A delta whose result does not hash as the CP says goes live on its version (as Kong's deltas do);
    // the DP's check, once per burst, finds it out and asks for the whole config, which replaces it.
    let abcd = table(up.port(), &["/a", "/b", "/c", "/d"]);
    let mut wrong = delta(15, &abc, &abcd);
    wrong.config_hash = "0123456789abcdef0123456789abcdef".into();
    let sent = std::time::Instant::now();
    cp.send(&wrong.encode());
    let (_, asked) = cp.frame(wait);
    let within = sent.elapsed();
    assert_eq!(asked["type"], "sluice_resync", "{asked}");
    assert!(
        asked["reason"].as_str().unwrap().contains("hash mismatch"),
        "{asked}"
    );
    assert!(
        within < Duration::from_millis(1500),
        "asked after {within:?}"
    );
    assert_eq!(status(&dp, "/d").await, 200);
    // Only once, however many deltas follow, and none of them goes live.
    cp.send(
        &delta(
            16,
            &abcd,
            &table(up.port(), &["/a", "/b", "/c", "/d", "/e"]),
        )
        .encode(),
    );
    assert_eq!(cp.maybe_frame(Duration::from_millis(1500)), None);
    assert_eq!(status(&dp, "/e").await, 404);
    cp.send(&full(abc.clone(), 17));
    until(&dp, "/d", 404, wait).await;
    assert_eq!(status(&dp, "/c").await, 200);
}
