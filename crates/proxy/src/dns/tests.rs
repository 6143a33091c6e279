use super::*;

#[tokio::test]
async fn resolves_localhost_and_caches_failures() {
    let addr = resolve("localhost", 8080).await.unwrap();
    assert_eq!(addr.port(), 8080);
    assert!(addr.ip().is_loopback());
    assert!(cached("localhost", 8080).is_some());
    // `.invalid` never resolves (RFC 6761).
    assert_eq!(
        resolve("sluice-test.invalid", 80).await,
        Err(ProxyError::NameResolution)
    );
    assert!(matches!(
        cached("sluice-test.invalid", 80),
        Some(Err(ProxyError::NameResolution))
    ));
}

#[tokio::test]
async fn a_failed_lookup_keeps_the_last_known_address() {
    let known: SocketAddr = "10.9.8.7:81".parse().unwrap();
    CACHE.with(|c| {
        c.borrow_mut().insert(
            ("sluice-stale.invalid".to_string(), 81),
            Entry {
                addrs: vec![known],
                next: 0,
                at: Instant::now() - TTL - Duration::from_secs(1),
            },
        )
    });
    assert!(cached("sluice-stale.invalid", 81).is_none(), "expired");
    assert_eq!(resolve("sluice-stale.invalid", 81).await, Ok(known));
    // Served from the cache again until the next retry is due.
    assert_eq!(cached("sluice-stale.invalid", 81), Some(Ok(known)));
}
