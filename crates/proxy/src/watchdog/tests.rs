//! Unit tests of `watchdog`.

use super::*;
use http_body_util::BodyExt;

#[tokio::test(start_paused = true)]
async fn a_connection_waiting_for_a_head_expires_and_one_serving_does_not() {
    let state = ConnState::new();
    let in_flight = state.request_started();
    let body = Tracked::new(
        sluice_upstream::body::full(Bytes::from_static(b"x")),
        in_flight,
    );
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

#[tokio::test(start_paused = true)]
async fn a_request_dropped_before_its_response_is_no_longer_in_flight() {
    let state = ConnState::new();
    let in_flight = state.request_started();
    // hyper drops the request's future (a reset h2 stream) before a response body exists.
    drop(in_flight);
    let waiting = tokio::time::timeout(
        Duration::from_secs(3),
        state.clone().expired(Duration::from_secs(1)),
    );
    assert!(waiting.await.is_ok(), "the dropped request still counted");
}
