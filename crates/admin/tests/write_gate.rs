//! Entity writes in DB mode run a bounded number at a time (issue 17, defect 7): many concurrent writes,
//! as decK sends them, all succeed, and no more than `WRITE_PERMITS` run at once.

mod common;

use common::{client, start, TestNode};
use serde_json::json;
use sluice_admin::WRITE_PERMITS;
use std::sync::atomic::Ordering;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_writes_wait_their_turn_and_all_succeed() {
    let node = TestNode::database();
    let s = start(node.clone()).await;
    let writes = WRITE_PERMITS * 5;
    let mut sent = tokio::task::JoinSet::new();
    for i in 0..writes {
        let req = client()
            .post(s.admin_url("/services"))
            .json(&json!({"name": format!("s{i}"), "url": "http://example.com"}));
        sent.spawn(async move { req.send().await.map(|r| r.status().as_u16()) });
    }
    while let Some(status) = sent.join_next().await {
        assert_eq!(status.unwrap().ok(), Some(201));
    }
    assert_eq!(node.writes.done.load(Ordering::SeqCst), writes);
    let peak = node.writes.peak.load(Ordering::SeqCst);
    assert!(peak <= WRITE_PERMITS, "{peak} writes ran at once");
    assert!(peak > 1, "the writes did not overlap at all: {peak}");
}
