//! Unit tests of `watchdog`.

use super::*;
use http_body_util::BodyExt;

fn both(limit: Duration) -> Limits {
    Limits {
        header: limit,
        keepalive: limit,
    }
}

#[tokio::test(start_paused = true)]
async fn a_connection_waiting_for_a_head_expires_and_one_serving_does_not() {
    let state = ConnState::new(Default::default());
    let in_flight = state.request_started();
    let body = Tracked::new(
        sluice_upstream::body::full(Bytes::from_static(b"x")),
        in_flight,
    );
    // A request in flight: the watchdog keeps quiet however long it takes.
    let serving = tokio::time::timeout(
        Duration::from_secs(10),
        state.clone().expired(both(Duration::from_secs(1))),
    );
    assert!(
        serving.await.is_err(),
        "expired while a request was in flight"
    );
    // The response is done: now the connection waits for a head, and expires.
    drop(body.collect().await);
    let waiting = tokio::time::timeout(
        Duration::from_secs(3),
        state.clone().expired(both(Duration::from_secs(1))),
    );
    assert!(waiting.await.is_ok(), "an idle connection did not expire");
}

#[tokio::test(start_paused = true)]
async fn a_request_dropped_before_its_response_is_no_longer_in_flight() {
    let state = ConnState::new(Default::default());
    let in_flight = state.request_started();
    // hyper drops the request's future (a reset h2 stream) before a response body exists.
    drop(in_flight);
    let waiting = tokio::time::timeout(
        Duration::from_secs(3),
        state.clone().expired(both(Duration::from_secs(1))),
    );
    assert!(waiting.await.is_ok(), "the dropped request still counted");
}

#[tokio::test(start_paused = true)]
async fn the_first_head_has_the_header_limit_and_an_idle_keep_alive_connection_the_keepalive_limit()
{
    let limits = Limits {
        header: Duration::from_secs(1),
        keepalive: Duration::from_secs(20),
    };
    let fresh = ConnState::new(Default::default());
    let waited = tokio::time::timeout(Duration::from_secs(3), fresh.clone().expired(limits));
    assert!(
        waited.await.is_ok(),
        "a silent new connection outlived the header limit"
    );

    let served = ConnState::new(Default::default());
    drop(served.request_started());
    let early = tokio::time::timeout(Duration::from_secs(10), served.clone().expired(limits));
    assert!(
        early.await.is_err(),
        "an idle keep-alive connection got the header limit"
    );
    let late = tokio::time::timeout(Duration::from_secs(15), served.clone().expired(limits));
    assert!(
        late.await.is_ok(),
        "an idle keep-alive connection outlived the keepalive limit"
    );
}
