//! Issue 20's exactness check, shared by the Redis and the cluster tests: three nodes, 300 concurrent
//! requests of one tenant spread over them, a limit of 100 per second, repeated 20 times. A per-second limit
//! lets a window boundary fall inside a run at no cost: even rounds start just after a second begins (the
//! whole run in one window), odd ones just before a second ends (the boundary inside the run).
//!
//! What is checked, per round: every request let through is counted once in the store (its count of the
//! run, read from a second limit so high it never fires, `minute: 1e9`, whose counters outlive the round);
//! within a window the requests let through got the counts 1, 2, ... each once (`X-RateLimit-Remaining-Second`
//! of each 200), so no window let more than 100 through; a refusal answered within one second came when that
//! window was full; and a run within one window let exactly 100 through.

use std::collections::BTreeMap;
use std::future::Future;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

pub const LIMIT: u64 = 100;
const ROUNDS: usize = 20;
/// On a slow machine a run may not fit in one second: rounds go on (up to this many) until both kinds ran.
const MAX_ROUNDS: usize = 40;
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

/// One request: when it was sent and answered (Unix seconds), its status, and for a 200 the count of its
/// window after it.
struct Call {
    sent: f64,
    answered: f64,
    status: u16,
    count: u64,
}

impl Call {
    /// The windows (second starts) the request may have been counted in.
    fn windows(&self) -> std::ops::RangeInclusive<u64> {
        self.sent.floor() as u64..=self.answered.floor() as u64
    }
}

async fn call(url: String, header: &'static str, tenant: String) -> Call {
    let sent = now();
    let resp = sluice_testkit::client()
        .get(url)
        .header(header, tenant)
        .send()
        .await
        .unwrap();
    let remaining = resp.headers().get("x-ratelimit-remaining-second");
    let remaining = remaining.and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    Call {
        sent,
        answered: now(),
        status: resp.status().as_u16(),
        count: remaining.map_or(0, |r| LIMIT - r),
    }
}

/// Runs the rounds against `urls` (one per node), the tenant in `header`, the plugin configured with
/// `second: 100` and `minute: 1000000000`; `counted` reads how many requests of a tenant the store counted
/// in its minute windows, right after its round.
pub async fn exact_rounds<F, Fut>(urls: &[String], header: &'static str, counted: F)
where
    F: Fn(String) -> Fut,
    Fut: Future<Output = u64>,
{
    let (mut within, mut across) = (0, 0);
    for round in 0..MAX_ROUNDS {
        if round >= ROUNDS && within > 0 && across > 0 {
            break;
        }
        let tenant = format!("r{round}-{}", uuid::Uuid::new_v4().simple());
        at_offset(if round % 2 == 0 { 0.02 } else { -0.04 }).await;
        let calls: Vec<_> = (0..REQUESTS)
            .map(|i| tokio::spawn(call(urls[i % urls.len()].clone(), header, tenant.clone())))
            .collect();
        let mut done = Vec::new();
        for c in calls {
            done.push(c.await.unwrap());
        }
        let first = done.iter().map(|c| c.sent).fold(f64::MAX, f64::min);
        let last = done.iter().map(|c| c.answered).fold(0.0, f64::max);
        let windows = (last.floor() - first.floor()) as usize + 1;
        let passed: Vec<&Call> = done.iter().filter(|c| c.status == 200).collect();
        let ok = passed.len() as u64;
        let what = format!("round {round}: {ok} passed, run {first:.3}..{last:.3}");
        assert!(
            done.iter().all(|c| c.status == 200 || c.status == 429),
            "{what}: a status other than 200 and 429"
        );
        assert_eq!(
            counted(tenant).await,
            ok,
            "{what}: not what the store counted"
        );
        // Each count 1..=100 once per window, at most.
        let mut seen: BTreeMap<u64, usize> = BTreeMap::new();
        for c in &passed {
            *seen.entry(c.count).or_default() += 1;
        }
        assert!(
            seen.iter()
                .all(|(count, n)| (1..=LIMIT).contains(count) && *n <= windows),
            "{what}: counts {seen:?} in {windows} window(s)"
        );
        // A refusal answered within its window came when the window was full.
        for c in done
            .iter()
            .filter(|c| c.status == 429 && c.windows().count() == 1)
        {
            let window = c.sent.floor() as u64;
            let full = passed
                .iter()
                .any(|p| p.count == LIMIT && p.windows().contains(&window));
            assert!(full, "{what}: refused in window {window}, which had room");
        }
        if windows == 1 {
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
