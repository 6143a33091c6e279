use super::*;

fn peer(host: &str) -> Peer {
    Peer::new(host, 80, host, 80)
}

#[test]
fn smooth_schedule_interleaves_by_weight() {
    assert_eq!(smooth_schedule(&[3, 1]), vec![0, 0, 1, 0]);
    assert_eq!(smooth_schedule(&[100, 100]), vec![0, 1]);
    assert_eq!(smooth_schedule(&[]), Vec::<u32>::new());
    let s = smooth_schedule(&[5, 3, 2]);
    assert_eq!(s.len(), 10);
    assert_eq!(s.iter().filter(|i| **i == 0).count(), 5);
    assert_eq!(s.iter().filter(|i| **i == 2).count(), 2);
    let big = smooth_schedule(&[65535, 1]);
    assert!(big.len() <= 10_001 && big.contains(&1));
}

#[test]
fn weight_zero_targets_are_skipped() {
    let b = Balancer::new(vec![(peer("10.0.0.1"), 0), (peer("10.0.0.2"), 10)]);
    for _ in 0..5 {
        assert_eq!(b.pick().unwrap().host, "10.0.0.2");
    }
    assert!(Balancer::new(vec![(peer("a"), 0)]).pick().is_none());
    assert!(Balancer::new(vec![]).pick().is_none());
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
