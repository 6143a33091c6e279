use super::*;
use http_body_util::BodyExt;

#[tokio::test(start_paused = true)]
async fn a_connection_waiting_for_a_head_expires_and_one_serving_does_not() {
    let state = ConnState::new();
    state.request_started();
    let body = Tracked::new(crate::body::full(Bytes::from_static(b"x")), state.clone());
    // A request in flight: the watchdog keeps quiet however long it takes.
    let serving = tokio::time::timeout(
        Duration::from_secs(10),
        state.clone().expired(Duration::from_secs(1)),
    );
    assert!(
        serving.await.is_err(),
        "expired while a request was in flight"
    );
    // The response is done: now the connection waits for a head, and expires.
    drop(body.collect().await);
    let waiting = tokio::time::timeout(
        Duration::from_secs(3),
        state.clone().expired(Duration::from_secs(1)),
    );
    assert!(waiting.await.is_ok(), "an idle connection did not expire");
}
