//! Issue 20's exactness check, shared by the Redis and the cluster tests: three nodes, 300 concurrent
//! requests of one tenant spread over them, a limit of 100 per second, repeated 20 times. A per-second limit
//! lets a window boundary fall inside a run at no cost: even rounds start just after a second begins (the
//! whole run in one window), odd ones just before a second ends (the boundary inside the run). The store's
//! own count of each window is the truth the responses are checked against.

use std::collections::BTreeMap;
use std::future::Future;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

pub const LIMIT: u64 = 100;
const ROUNDS: usize = 20;
const REQUESTS: usize = 300;

fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

/// Sleeps until `offset` seconds after the start of the next second (before it, when negative).
async fn at_offset(offset: f64) {
    let t = now();
    let mut target = t.floor() + 1.0 + offset;
    if target <= t {
        target += 1.0;
    }
    tokio::time::sleep(Duration::from_secs_f64(target - t)).await;
}

/// One request: when it was sent and answered (Unix seconds) and its status.
struct Call {
    sent: f64,
    answered: f64,
    status: u16,
}

/// Runs the rounds against `urls` (one per node), the tenant in `header`; `counts` reads the store's count
/// of each window of a tenant (window start in Unix seconds → count), right after its round.
pub async fn exact_rounds<F, Fut>(urls: &[String], header: &'static str, counts: F)
where
    F: Fn(String) -> Fut,
    Fut: Future<Output = BTreeMap<u64, u64>>,
{
    let (mut within, mut across) = (0, 0);
    for round in 0..ROUNDS {
        let tenant = format!("r{round}-{}", uuid::Uuid::new_v4().simple());
        at_offset(if round % 2 == 0 { 0.02 } else { -0.04 }).await;
        let calls: Vec<_> = (0..REQUESTS)
            .map(|i| {
                let (url, tenant) = (urls[i % urls.len()].clone(), tenant.clone());
                tokio::spawn(async move {
                    let sent = now();
                    let status = sluice_testkit::status_with(url, header, tenant).await;
                    Call {
                        sent,
                        answered: now(),
                        status,
                    }
                })
            })
            .collect();
        let mut done = Vec::new();
        for c in calls {
            done.push(c.await.unwrap());
        }
        let counts = counts(tenant).await;
        let first = done.iter().map(|c| c.sent).fold(f64::MAX, f64::min);
        let last = done.iter().map(|c| c.answered).fold(0.0, f64::max);
        let ok = done.iter().filter(|c| c.status == 200).count() as u64;
        let what =
            format!("round {round}: {ok} passed, windows {counts:?}, run {first:.3}..{last:.3}");
        assert!(
            done.iter().all(|c| c.status == 200 || c.status == 429),
            "{what}: a status other than 200 and 429"
        );
        assert!(
            counts.values().all(|c| *c <= LIMIT),
            "{what}: a window let more than the limit through"
        );
        assert_eq!(
            counts.values().sum::<u64>(),
            ok,
            "{what}: the requests let through are not the ones counted"
        );
        // A refusal sent and answered within one second belongs to that window, which must be full.
        for c in done.iter().filter(|c| c.status == 429) {
            if c.sent.floor() == c.answered.floor() {
                let window = c.sent.floor() as u64;
                assert_eq!(
                    counts.get(&window),
                    Some(&LIMIT),
                    "{what}: refused in window {window}, which had room"
                );
            }
        }
        if first.floor() == last.floor() {
            within += 1;
            assert_eq!(ok, LIMIT, "{what}: one window, exactly the limit");
        } else {
            across += 1;
        }
    }
    eprintln!("{within} rounds within one window, {across} across a boundary");
    assert!(
        within > 0 && across > 0,
        "{within} rounds within one window, {across} across a boundary: both kinds must run"
    );
}
