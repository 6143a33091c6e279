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
        Some(Hit::Fresh(Err(ProxyError::NameResolution)))
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
                refreshing: false,
            },
        )
    });
    assert!(cached("sluice-stale.invalid", 81).is_none(), "expired");
    assert_eq!(resolve("sluice-stale.invalid", 81).await, Ok(known));
    // Served from the cache again until the next retry is due.
    assert_eq!(
        cached("sluice-stale.invalid", 81),
        Some(Hit::Fresh(Ok(known)))
    );
}

#[tokio::test]
async fn a_name_about_to_expire_is_refreshed_in_the_background() {
    let stale: SocketAddr = "10.9.8.6:82".parse().unwrap();
    CACHE.with(|c| {
        c.borrow_mut().insert(
            ("localhost".to_string(), 82),
            Entry {
                addrs: vec![stale],
                next: 0,
                at: Instant::now() - TTL + REFRESH_AHEAD / 2,
                refreshing: false,
            },
        )
    });
    // The request gets the known address at once; the refresh runs beside it.
    assert_eq!(resolve("localhost", 82).await, Ok(stale));
    for _ in 0..200 {
        if matches!(cached("localhost", 82), Some(Hit::Fresh(Ok(a))) if a.ip().is_loopback()) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("localhost was not refreshed");
}
