//! Tests of the balancers: skipping disabled and unhealthy targets, retries, least-connections, latency,
//! the threshold, consistent hashing, `Host` headers.

use super::*;
use std::time::Duration;

fn peer(host: &str) -> Peer {
    Peer::new(host, 80, host, 80)
}

fn target(host: &str, weight: u32) -> Target {
    Target {
        peer: peer(host),
        name: format!("{host}:80"),
        weight,
        state: Arc::default(),
    }
}

fn balancer(weights: &[u32], spec: AlgorithmSpec) -> Balancer {
    let targets = weights
        .iter()
        .enumerate()
        .map(|(i, w)| target(&format!("10.0.0.{i}"), *w))
        .collect();
    Balancer::new(targets, spec, 0.0)
}

/// How many of `n` picks each target gets.
fn spread(b: &Balancer, n: usize) -> Vec<usize> {
    let mut counts = vec![0; b.targets().len()];
    for _ in 0..n {
        counts[b.pick(None, &[]).unwrap().index] += 1;
    }
    counts
}

#[test]
fn weight_zero_targets_are_skipped() {
    let b = balancer(&[0, 10], AlgorithmSpec::RoundRobin);
    assert_eq!(spread(&b, 5), vec![0, 5]);
    assert!(balancer(&[0], AlgorithmSpec::RoundRobin)
        .pick(None, &[])
        .is_none());
    assert!(balancer(&[], AlgorithmSpec::RoundRobin)
        .pick(None, &[])
        .is_none());
    for spec in [AlgorithmSpec::LeastConnections, AlgorithmSpec::Latency] {
        assert_eq!(spread(&balancer(&[0, 10], spec), 5), vec![0, 5]);
    }
}

#[test]
fn unhealthy_targets_are_skipped_and_all_unhealthy_is_no_peer() {
    let specs = || {
        [
            AlgorithmSpec::RoundRobin,
            AlgorithmSpec::LeastConnections,
            AlgorithmSpec::Latency,
            AlgorithmSpec::ConsistentHashing {
                key: HashKey::none(),
                slots: 100,
            },
        ]
    };
    for spec in specs() {
        let b = balancer(&[100, 100, 100], spec.clone());
        b.targets()[1].state.set_by_admin(false);
        let counts = spread(&b, 60);
        assert_eq!(counts[1], 0, "{spec:?}");
        assert_eq!(counts[0] + counts[2], 60, "{spec:?}");
        for t in b.targets() {
            t.state.set_by_admin(false);
        }
        assert!(b.pick(None, &[]).is_none(), "{spec:?}");
    }
}

#[test]
fn retries_avoid_tried_targets_while_another_is_usable() {
    let b = balancer(&[100, 100, 100], AlgorithmSpec::LeastConnections);
    let first = b.pick(None, &[]).unwrap().index;
    let second = b.pick(None, &[first]).unwrap().index;
    let third = b.pick(None, &[first, second]).unwrap().index;
    let mut all = vec![first, second, third];
    all.sort();
    assert_eq!(all, vec![0, 1, 2]);
    // Everything tried: any usable target again rather than none.
    assert!(b.pick(None, &[0, 1, 2]).is_some());
}

#[test]
fn least_connections_prefers_the_least_loaded_by_weight() {
    let b = balancer(&[100, 100, 200], AlgorithmSpec::LeastConnections);
    let _busy = [b.targets()[0].state.start(), b.targets()[2].state.start()];
    // Costs (in flight + 1) / weight: 2/100, 1/100, 2/200: target 0 is the most loaded.
    let picked: Vec<usize> = (0..4).map(|_| b.pick(None, &[]).unwrap().index).collect();
    assert!(picked.iter().all(|i| *i != 0), "{picked:?}");
    drop(_busy);
    assert_eq!(b.targets()[0].state.inflight(), 0);
    // Idle: the heaviest target is always the cheapest.
    assert_eq!(spread(&b, 10), vec![0, 0, 10]);
    // Real load: each pick holds its slot, so picks spread 1:1:2.
    let held: Vec<_> = (0..40)
        .map(|_| b.pick(None, &[]).unwrap().target.state.start())
        .collect();
    let loads: Vec<u32> = b.targets().iter().map(|t| t.state.inflight()).collect();
    assert_eq!(loads, vec![10, 10, 20]);
    drop(held);
}

#[test]
fn latency_prefers_the_fastest_target_and_tries_unmeasured_ones_first() {
    let b = balancer(&[100, 100], AlgorithmSpec::Latency);
    b.targets()[0]
        .state
        .record_latency(Duration::from_millis(5));
    assert_eq!(spread(&b, 5), vec![0, 5], "unmeasured first");
    b.targets()[1]
        .state
        .record_latency(Duration::from_millis(50));
    assert_eq!(spread(&b, 5), vec![5, 0]);
    // Load counts too: 5 ms × 20 in flight costs more than 50 ms × 1.
    let held: Vec<_> = (0..20).map(|_| b.targets()[0].state.start()).collect();
    assert_eq!(spread(&b, 3), vec![0, 3]);
    drop(held);
}

#[test]
fn latency_average_takes_peaks_at_once_and_decays_slowly() {
    let s = TargetState::default();
    s.record_latency(Duration::from_millis(10));
    assert_eq!(s.ewma_us(), 10_000);
    s.record_latency(Duration::from_millis(100));
    assert_eq!(s.ewma_us(), 100_000);
    s.record_latency(Duration::from_millis(10));
    assert_eq!(s.ewma_us(), 73_000);
}

#[test]
fn threshold_refuses_picks_when_too_little_weight_is_healthy() {
    let targets = (0..4)
        .map(|i| target(&format!("10.1.0.{i}"), 100))
        .collect();
    let b = Balancer::new(targets, AlgorithmSpec::RoundRobin, 50.0);
    b.targets()[0].state.set_by_admin(false);
    assert!(b.pick(None, &[]).is_some());
    b.targets()[1].state.set_by_admin(false);
    assert!(b.pick(None, &[]).is_some(), "exactly 50% healthy is enough");
    b.targets()[2].state.set_by_admin(false);
    assert!(b.pick(None, &[]).is_none());
}

#[test]
fn hashing_sends_a_key_to_one_target_and_walks_on_when_it_is_down() {
    let b = balancer(
        &[100, 100, 100],
        AlgorithmSpec::ConsistentHashing {
            key: HashKey::none(),
            slots: 1000,
        },
    );
    let owner = b.pick(Some(42), &[]).unwrap().index;
    for _ in 0..10 {
        assert_eq!(b.pick(Some(42), &[]).unwrap().index, owner);
    }
    b.targets()[owner].state.set_by_admin(false);
    let next = b.pick(Some(42), &[]).unwrap().index;
    assert_ne!(next, owner);
    assert_eq!(b.pick(Some(42), &[]).unwrap().index, next);
    b.targets()[owner].state.set_by_admin(true);
    assert_eq!(
        b.pick(Some(42), &[]).unwrap().index,
        owner,
        "back once healthy"
    );
}

#[test]
fn host_headers_carry_non_default_ports() {
    assert_eq!(
        Peer::new("10.0.0.1", 80, "10.0.0.1", 80).host_header,
        "10.0.0.1"
    );
    assert_eq!(
        Peer::new("10.0.0.1", 8080, "api.test", 80).host_header,
        "api.test:8080"
    );
    assert_eq!(
        Peer::new("10.0.0.1", 443, "api.test", 80).host_header,
        "api.test:443"
    );
    assert_eq!(
        Peer::new("[::1]", 8000, "[::1]", 80).host_header,
        "[::1]:8000"
    );
}

#[tokio::test]
async fn ip_literals_resolve_without_dns() {
    let addr = Peer::new("[::1]", 8000, "[::1]", 80)
        .resolve()
        .await
        .unwrap();
    assert_eq!(addr, "[::1]:8000".parse().unwrap());
    let addr = peer("127.0.0.1").resolve().await.unwrap();
    assert_eq!(addr, "127.0.0.1:80".parse().unwrap());
}

#[test]
fn latency_shares_between_equally_fast_targets_and_starves_the_slow_one() {
    let b = balancer(&[100, 100, 100], AlgorithmSpec::Latency);
    b.targets()[0]
        .state
        .record_latency(Duration::from_millis(2));
    b.targets()[1]
        .state
        .record_latency(Duration::from_millis(3));
    b.targets()[2]
        .state
        .record_latency(Duration::from_millis(80));
    let counts = spread(&b, 300);
    assert_eq!(counts[2], 0, "{counts:?}");
    assert!(
        counts[1] >= 60,
        "the slightly slower fast target still gets traffic: {counts:?}"
    );
}
