//! Unit tests of `health`.
use super::*;
use sluice_model::{HealthyRule, UnhealthyRule};

fn rules(successes: u32, http: u32, tcp: u32, timeouts: u32) -> Rules {
    Rules::new(
        &HealthyRule {
            interval: None,
            http_statuses: vec![200, 302],
            successes,
        },
        &UnhealthyRule {
            interval: None,
            http_statuses: vec![500, 503],
            tcp_failures: tcp,
            timeouts,
            http_failures: http,
        },
    )
}

#[test]
fn failures_past_the_threshold_make_a_target_unhealthy_and_successes_bring_it_back() {
    let r = rules(2, 3, 1, 2);
    let s = TargetState::default();
    assert_eq!(r.report_status(&s, 500), None);
    assert_eq!(r.report_status(&s, 500), None);
    assert_eq!(
        r.report_status(&s, 200),
        None,
        "a success resets the failures"
    );
    assert_eq!(r.report_status(&s, 500), None);
    assert_eq!(r.report_status(&s, 503), None);
    assert_eq!(r.report_status(&s, 404), None, "neither list: not counted");
    assert_eq!(r.report_status(&s, 500), Some(false));
    assert!(!s.is_healthy());
    assert_eq!(r.report_status(&s, 500), None);
    assert_eq!(r.report_status(&s, 200), None);
    assert_eq!(
        r.report_failure(&s, Failure::Tcp),
        None,
        "a failure resets the successes"
    );
    assert_eq!(r.report_status(&s, 302), None);
    assert_eq!(r.report_success(&s), Some(true));
    assert!(s.is_healthy());
    assert_eq!(
        r.report_failure(&s, Failure::Tcp),
        Some(false),
        "tcp_failures 1"
    );
}

#[test]
fn zero_thresholds_never_change_health() {
    let r = rules(0, 0, 0, 0);
    assert!(!r.enabled());
    let s = TargetState::default();
    for _ in 0..100 {
        r.report_status(&s, 500);
        r.report_failure(&s, Failure::Timeout);
    }
    assert!(s.is_healthy());
    s.set_by_admin(false);
    for _ in 0..100 {
        r.report_status(&s, 200);
    }
    assert!(!s.is_healthy(), "only an admin call brings it back");
}

#[test]
fn the_registry_keeps_state_while_a_snapshot_holds_it() {
    let reg = Registry::default();
    let a = reg.state("Up.Stream", "10.0.0.1:80");
    a.set_by_admin(false);
    let again = reg.state("up.stream", "10.0.0.1:80");
    assert!(Arc::ptr_eq(&a, &again));
    assert!(!Arc::ptr_eq(&a, &reg.state("other", "10.0.0.1:80")));
    drop((a, again));
    assert!(
        reg.state("up.stream", "10.0.0.1:80").is_healthy(),
        "fresh once released"
    );
}

#[test]
fn status_sets_hold_any_http_status() {
    let set = StatusSet::of(&[100, 200, 599, 999]);
    for s in [100, 200, 599, 999] {
        assert!(set.contains(s));
    }
    assert!(!set.contains(201) && !set.contains(1023) && !set.contains(5000));
}
