//! Active health checks: probes sent in the background, one task per upstream with checks on, all on one
//! `sluice-health` thread for the whole process (not per worker, never per request).
//!
//! The thread watches the live snapshot, woken by the config source when one goes live (else it looks
//! every 100 ms); after a reload it keeps the task of every upstream whose checks and targets are
//! unchanged, restarts the others and stops those of removed upstreams. Woken, an idle gateway's checker
//! sleeps until a reload: polling cost 10-20 wake-ups a second, ~1.5 ms of CPU a second here. Probe results feed
//! the same [`TargetState`] the proxy reads, so a probe-detected failure is seen by every worker at once.
//! A healthy target is probed every `healthy.interval`, an unhealthy one every `unhealthy.interval`
//! (0: targets in that state are not probed), at most `concurrency` probes at a time. One probe is
//! [`sluice_upstream::probe::run`].

use crate::snapshot::{Checked, SharedSnapshot, Snapshot};
use sluice_upstream::balancer::Balancer;
use sluice_upstream::health::active::Spec;
use sluice_upstream::health::{Failure, Rules, TargetState};
use sluice_upstream::probe;
use std::collections::HashMap;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};
use tokio::sync::{watch, Semaphore};
use tokio::task::JoinHandle;

/// Starts the `sluice-health` thread; it stops when `stop` changes or its sender is dropped. `published`
/// changes each time a new snapshot goes live (None: poll every 100 ms).
pub fn start(
    snapshot: SharedSnapshot,
    mut stop: watch::Receiver<Option<Duration>>,
    mut published: Option<watch::Receiver<u64>>,
) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name("sluice-health".into())
        .spawn(move || {
            let rt = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(rt) => rt,
                Err(e) => return tracing::error!(error = %e, "active health checks not started"),
            };
            rt.block_on(async move {
                let mut running: HashMap<String, (String, JoinHandle<()>)> = HashMap::new();
                // The snapshot last reconciled, not held: a replaced one is freed by the loader, not
                // here up to 100 ms later (holding it also kept DB mode's spare config from being
                // reused). The `Weak` keeps its address from being taken by a newer one.
                let mut seen: Weak<Snapshot> = Weak::new();
                loop {
                    let snap = snapshot.load_full();
                    if !std::ptr::eq(seen.as_ptr(), Arc::as_ptr(&snap)) {
                        seen = Arc::downgrade(&snap);
                        reconcile(&mut running, snap.upstreams.checked());
                    }
                    drop(snap);
                    tokio::select! {
                        _ = stop.changed() => break,
                        _ = next_snapshot(&mut published) => {}
                    }
                }
                for (_, (_, task)) in running {
                    task.abort();
                }
            });
        })
        .map(|_| ())
}

/// Returns when a new snapshot may be live: when `published` changes, or after 100 ms without one (and
/// for good polling once its sender is gone).
async fn next_snapshot(published: &mut Option<watch::Receiver<u64>>) {
    if let Some(rx) = published {
        if rx.changed().await.is_ok() {
            return;
        }
        *published = None;
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
}

/// Keeps the tasks whose upstream, check and targets are unchanged; (re)starts or stops the others.
fn reconcile(running: &mut HashMap<String, (String, JoinHandle<()>)>, wanted: Vec<Checked>) {
    let mut next = HashMap::new();
    for c in wanted {
        let targets: Vec<(&str, u32)> = c
            .balancer
            .targets()
            .iter()
            .map(|t| (t.name.as_str(), t.weight))
            .collect();
        let fingerprint = format!("{:?}{targets:?}", c.spec);
        let task = match running.remove(&c.upstream) {
            Some((f, task)) if f == fingerprint && !task.is_finished() => task,
            old => {
                if let Some((_, task)) = old {
                    task.abort();
                }
                tokio::spawn(check_loop(c.upstream.clone(), c.spec, c.balancer))
            }
        };
        next.insert(c.upstream, (fingerprint, task));
    }
    for (_, (_, task)) in running.drain() {
        task.abort();
    }
    *running = next;
}

/// Probes the upstream's targets for as long as the task lives.
async fn check_loop(upstream: String, spec: Arc<Spec>, balancer: Arc<Balancer>) {
    let limit = Arc::new(Semaphore::new(spec.concurrency));
    let mut last: Vec<Option<Instant>> = vec![None; balancer.targets().len()];
    loop {
        let now = Instant::now();
        let mut wait = Duration::from_millis(500);
        let mut probes = Vec::new();
        for (i, t) in balancer.targets().iter().enumerate() {
            let Some(interval) = spec.interval(t.state.is_healthy()) else {
                continue;
            };
            let due = last[i].map_or(now, |at| at + interval);
            if due <= now {
                last[i] = Some(now);
                let (spec, limit, state) = (spec.clone(), limit.clone(), t.state.clone());
                let (peer, name, upstream) = (t.peer.clone(), t.name.clone(), upstream.clone());
                probes.push(tokio::spawn(async move {
                    let _permit = limit.acquire_owned().await;
                    let outcome = probe::run(&spec, &peer).await;
                    apply(&spec.rules, &state, outcome, &upstream, &name);
                }));
                wait = wait.min(interval);
            } else {
                wait = wait.min(due - now);
            }
        }
        for p in probes {
            let _ = p.await;
        }
        // Intervals run from the start of a probe, not its end: a probe that times out does not delay the
        // next one by its timeout.
        let next = now + wait.max(Duration::from_millis(10));
        tokio::time::sleep_until(next.into()).await;
    }
}

/// Feeds one probe's outcome to the target's counters, logging a change of health.
fn apply(
    rules: &Rules,
    state: &TargetState,
    outcome: Result<u16, Failure>,
    upstream: &str,
    target: &str,
) {
    let changed = match outcome {
        Ok(0) => rules.report_success(state),
        Ok(status) => rules.report_status(state, status),
        Err(kind) => rules.report_failure(state, kind),
    };
    match changed {
        Some(true) => tracing::warn!(upstream, target, "target is healthy again (active check)"),
        Some(false) => tracing::warn!(
            upstream,
            target,
            ?outcome,
            "target is unhealthy (active check)"
        ),
        None => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arc_swap::ArcSwap;

    #[test]
    fn a_replaced_snapshot_is_not_held_between_checks() {
        // Polling, and woken by the config source.
        for notified in [false, true] {
            replaced_snapshot_is_not_held(notified);
        }
    }

    fn replaced_snapshot_is_not_held(notified: bool) {
        let shared: SharedSnapshot = Arc::new(ArcSwap::from_pointee(Snapshot::empty()));
        let (stop, watching) = watch::channel(None);
        let (published, subscribed) = watch::channel(0);
        start(shared.clone(), watching, notified.then_some(subscribed)).unwrap();
        // Let the thread look at the first snapshot, then replace it.
        std::thread::sleep(Duration::from_millis(150));
        let old = Arc::downgrade(&shared.swap(Arc::new(Snapshot::empty())));
        published.send_modify(|n| *n += 1);
        // The thread waits 100 ms between looks: a snapshot kept across the wait outlives this.
        let deadline = Instant::now() + Duration::from_millis(10);
        while old.strong_count() > 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(old.strong_count(), 0, "the health thread still holds it");
        stop.send_replace(Some(Duration::ZERO));
    }
}
