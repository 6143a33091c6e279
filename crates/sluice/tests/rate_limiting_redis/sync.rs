//! `sync_rate > 0` (Kong's batching) through real nodes: two nodes share a limit within the documented bound,
//! requests stay off Redis between syncs, and a hung or dead Redis neither blocks requests nor loses the
//! counts of the outage.

use super::private_redis::{free_port, PrivateRedis};
use super::{clean, config, redis_on, BIN};
use redis::AsyncCommands;
use sluice_testkit::{status_with, EchoUpstream, Gateway};
use std::time::{Duration, Instant};

/// Syncs every 0.1 s; waiting this long sees at least one sync of every node, and its reply read back.
const SYNC_RATE: &str = "sync_rate: 0.1";
const SYNCED: Duration = Duration::from_millis(400);

/// Hourly limits: wait past the end of an hour that is about to end.
async fn not_near_the_hours_end() {
    if sluice_testkit::seconds_left_in_hour() < 30 {
        tokio::time::sleep(Duration::from_secs(
            sluice_testkit::seconds_left_in_hour() + 1,
        ))
        .await;
    }
}

/// The config of `config` (`hour: 100`, by `x-tenant`) with `sync_rate` and a Redis `timeout` of `timeout` ms.
fn synced(upstream: u16, route: uuid::Uuid, port: u16, timeout: u32, extra: &str) -> String {
    config(upstream, route, port, extra)
        .replace("hour: 100", &format!("hour: 100\n        {SYNC_RATE}"))
        .replace("timeout: 300", &format!("timeout: {timeout}"))
}

/// How many of `n` sequential requests of `tenant` pass.
async fn passed(gw: &Gateway, tenant: &str, n: usize) -> usize {
    let mut ok = 0;
    for _ in 0..n {
        match status_with(gw.proxy_url("/limited"), "x-tenant", tenant.into()).await {
            200 => ok += 1,
            429 => {}
            other => panic!("unexpected status {other}"),
        }
    }
    ok
}

/// The count Redis on `port` holds for `tenant` in this hour.
async fn on_redis(port: u16, route: uuid::Uuid, tenant: &str) -> u64 {
    let mut con = redis_on(port).await;
    let keys: Vec<String> = con
        .keys(format!("ratelimit:{route}:*:{tenant}:*:hour"))
        .await
        .unwrap();
    match keys.as_slice() {
        [] => 0,
        [key] => con.get(key).await.unwrap(),
        more => panic!("{more:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_nodes_share_a_limit_within_the_bound() {
    not_near_the_hours_end().await;
    let up = EchoUpstream::start();
    let route = uuid::Uuid::new_v4();
    let yaml = synced(up.port(), route, 6379, 2000, "");
    let (a, b) = (
        Gateway::builder(BIN).config_yaml(&yaml).workers(2).start(),
        Gateway::builder(BIN).config_yaml(&yaml).workers(2).start(),
    );
    // Turns apart by more than two syncs: each node sees the other's count, so the limit is exact.
    assert_eq!(passed(&a, "seq", 60).await, 60);
    tokio::time::sleep(SYNCED).await;
    assert_eq!(passed(&b, "seq", 60).await, 40);
    tokio::time::sleep(SYNCED).await;
    assert_eq!(passed(&a, "seq", 10).await, 0);
    assert_eq!(
        on_redis(6379, route, "seq").await,
        100,
        "each pass sent once"
    );

    // At once on both nodes: within the bound (each node alone is exact, so at most 2 × 100), and every
    // request let through is on Redis after the next syncs, exactly once. Redis may hold a few more: a
    // request that went to Redis while its node was seeding the window, and that the node's own counts
    // then refused, stays counted (the strict side); those are among the at most 100 the script grants.
    let calls: Vec<_> = (0..300)
        .map(|i| {
            let url = [&a, &b][i % 2].proxy_url("/limited");
            tokio::spawn(status_with(url, "x-tenant", "burst".into()))
        })
        .collect();
    let mut ok = 0;
    for c in calls {
        ok += u64::from(c.await.unwrap() == 200);
    }
    assert!((100..=200).contains(&ok), "{ok} passed");
    tokio::time::sleep(SYNCED).await;
    let counted = on_redis(6379, route, "burst").await;
    assert!(
        (ok..=ok + 100).contains(&counted),
        "{ok} passed, {counted} on Redis"
    );
    assert_eq!(
        passed(&a, "burst", 5).await + passed(&b, "burst", 5).await,
        0
    );
    clean(6379, route).await;
}

/// Calls of one command in Redis's `INFO commandstats`.
fn calls(stats: &str, command: &str) -> u64 {
    let line = stats
        .lines()
        .find(|l| l.starts_with(&format!("cmdstat_{command}:")));
    line.and_then(|l| l.split("calls=").nth(1))
        .and_then(|v| v.split(',').next())
        .map_or(0, |v| v.parse().unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn between_syncs_requests_do_not_touch_redis() {
    not_near_the_hours_end().await;
    let port = free_port();
    let _redis = PrivateRedis::start(port);
    let up = EchoUpstream::start();
    let route = uuid::Uuid::new_v4();
    let gw = Gateway::builder(BIN)
        .config_yaml(&synced(up.port(), route, port, 2000, ""))
        .workers(2)
        .start();
    let mut con = redis_on(port).await;
    let started = Instant::now();
    assert_eq!(passed(&gw, "t", 50).await, 50);
    tokio::time::sleep(SYNCED).await;
    let syncs = (started.elapsed().as_secs_f64() / 0.1).ceil() as u64 + 1;
    let stats: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(&mut con)
        .await
        .unwrap();
    // The first request of the window on each worker at most is checked on Redis; the rest are synced.
    let scripts = calls(&stats, "evalsha") + calls(&stats, "eval");
    assert!((1..=4).contains(&scripts), "{scripts} scripts: {stats}");
    let incrby = calls(&stats, "incrby");
    assert!(
        (1..=syncs).contains(&incrby),
        "{incrby} INCRBY in {syncs} syncs"
    );
    assert_eq!(on_redis(port, route, "t").await, 50);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hung_or_dead_redis_blocks_no_request_and_loses_no_count() {
    not_near_the_hours_end().await;
    let port = free_port();
    let redis = PrivateRedis::start(port);
    let up = EchoUpstream::start();
    let route = uuid::Uuid::new_v4();
    let strict = format!(
        r#"  - name: strict
    paths: [/strict]
    plugins:
    - name: rate-limiting
      config:
        hour: 100
        limit_by: header
        header_name: x-tenant
        policy: redis
        {SYNC_RATE}
        fault_tolerant: false
        redis: {{host: 127.0.0.1, port: {port}, timeout: 500}}
"#
    );
    let yaml =
        synced(up.port(), route, port, 2000, &strict).replacen("hour: 100\n", "hour: 20\n", 1);
    let gw = Gateway::builder(BIN).config_yaml(&yaml).workers(2).start();
    assert_eq!(passed(&gw, "a", 5).await, 5);
    tokio::time::sleep(SYNCED).await;
    assert_eq!(on_redis(port, route, "a").await, 5);

    // Hung (SIGSTOP, shorter than the 2 s timeout): a sync waits on the background thread; requests are
    // answered at once and counted on the node, and sent once Redis answers again.
    let pid = redis.0.id().to_string();
    let signal = |sig: &str| {
        let status = std::process::Command::new("kill")
            .args([sig, &pid])
            .status();
        assert!(status.unwrap().success());
    };
    signal("-STOP");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let started = Instant::now();
    assert_eq!(passed(&gw, "a", 10).await, 10);
    let took = started.elapsed();
    signal("-CONT");
    assert!(
        took < Duration::from_millis(500),
        "10 requests took {took:?}"
    );
    tokio::time::sleep(SYNCED).await;
    assert_eq!(on_redis(port, route, "a").await, 15);

    // Dead: the node goes on counting; a tenant new to it passes (fault_tolerant) or gets Kong's 500.
    drop(redis);
    assert_eq!(passed(&gw, "a", 10).await, 5, "the limit holds on the node");
    assert_eq!(passed(&gw, "b", 1).await, 1);
    let strict = status_with(gw.proxy_url("/strict"), "x-tenant", "c".into()).await;
    assert_eq!(strict, 500);

    // Back (empty: it kept nothing): what the node let through during the outage reaches it.
    let _redis = PrivateRedis::start(port);
    let mut synced_back = 0;
    for _ in 0..30 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        synced_back = on_redis(port, route, "a").await;
        if synced_back == 5 {
            break;
        }
    }
    assert_eq!(synced_back, 5, "the 5 let through during the outage");
}
