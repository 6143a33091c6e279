//! The batch against the real Redis on 127.0.0.1:6379 (database 7, keys of each test's own): two batches
//! play two nodes, and syncs are run by hand. Keys expire after 60 s.

use super::*;
use crate::builtin::rate_limiting::redis::RedisConfig;

fn target() -> Arc<Target> {
    Arc::new(
        Target::new(&RedisConfig {
            host: Some("127.0.0.1".into()),
            port: Some(6379),
            database: Some(7),
            timeout: Some(500),
            ..RedisConfig::default()
        })
        .unwrap(),
    )
}

/// A batch whose own task never syncs during the test.
fn node() -> Arc<Batch> {
    Batch::start(target(), Duration::from_secs(3600)).unwrap()
}

const SLOT: Slot = (1, 0);

/// One request as the plugin counts it: on the node, or on Redis for a window the node has not seen.
async fn admit(b: &Batch, key: &str, limit: u64, end: u64) -> bool {
    if let Some(exceeded) = b.count(&[SLOT], &[limit], &mut [0]) {
        return !exceeded;
    }
    let window = redis::Keyed::new(&[(key.as_bytes(), limit, 60)]);
    let counted = redis::check_and_count(&b.target, &window).await.unwrap();
    let known = Known {
        key: key.into(),
        ttl_secs: 60,
        end,
    };
    b.learn(&[SLOT], vec![known], &counted, &[limit])
}

async fn on_redis(key: &str) -> u64 {
    redis::counts(&target(), &[key.to_string()]).await.unwrap()[0]
}

async fn admitted(b: &Batch, key: &str, limit: u64, n: usize) -> usize {
    let mut passed = 0;
    for _ in 0..n {
        passed += usize::from(admit(b, key, limit, u64::MAX).await);
    }
    passed
}

#[tokio::test(flavor = "current_thread")]
async fn nodes_count_locally_and_share_totals_through_syncs() {
    let key = format!("ratelimit:{}:batch", uuid::Uuid::new_v4());
    let (a, b) = (node(), node());
    // Node a: the first request counts on Redis, the next four on the node only.
    assert_eq!(admitted(&a, &key, 10, 5).await, 5);
    assert_eq!(on_redis(&key).await, 1);
    a.sync().await;
    assert_eq!(on_redis(&key).await, 5, "a sync sends what was not sent");
    a.sync().await;
    assert_eq!(on_redis(&key).await, 5, "and sends it once");
    // Node b seeds from Redis (5 counted) and lets through the rest of the limit, then refuses.
    assert_eq!(admitted(&b, &key, 10, 8).await, 5);
    b.sync().await;
    assert_eq!(on_redis(&key).await, 10);
    // Node a reads back the total: nothing left.
    a.sync().await;
    assert_eq!(admitted(&a, &key, 10, 3).await, 0);
    assert_eq!(on_redis(&key).await, 10, "refusals count nothing");
}

#[tokio::test(flavor = "current_thread")]
async fn an_ended_window_is_sent_then_dropped() {
    let key = format!("ratelimit:{}:ended", uuid::Uuid::new_v4());
    let a = node();
    let ended = 1;
    assert!(admit(&a, &key, 10, ended).await);
    assert!(admit(&a, &key, 10, ended).await);
    a.sync().await;
    assert_eq!(on_redis(&key).await, 2);
    let live: usize = a.shards.iter().map(|s| s.read().unwrap().len()).sum();
    assert_eq!(live, 0);
}

#[tokio::test(flavor = "current_thread")]
async fn an_idle_window_is_dropped_and_read_from_redis_again() {
    let key = format!("ratelimit:{}:idle", uuid::Uuid::new_v4());
    let a = node();
    assert_eq!(admitted(&a, &key, 10, 3).await, 3);
    let live = |b: &Batch| {
        b.shards
            .iter()
            .map(|s| s.read().unwrap().len())
            .sum::<usize>()
    };
    for _ in 0..=IDLE_SYNCS {
        a.sync().await;
    }
    assert_eq!(live(&a), 1, "idle for IDLE_SYNCS syncs: kept");
    a.sync().await;
    assert_eq!(live(&a), 0, "idle for one more: dropped");
    assert_eq!(on_redis(&key).await, 3);
    // Another node counted meanwhile; the next request reads Redis again and sees it.
    let _ = redis::add_each(&target(), &[(&key, 60, 6)]).await.unwrap();
    assert_eq!(admitted(&a, &key, 10, 3).await, 1);
    assert_eq!(on_redis(&key).await, 10);
}
