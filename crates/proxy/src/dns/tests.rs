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
