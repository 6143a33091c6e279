//! rate-limiting with `policy: cluster`: three DB-mode nodes on one real PostgreSQL database (made and
//! dropped by the test) share one limit, exactly, in Kong's `ratelimiting_metrics` table (issue 20; the
//! rounds are [`rounds`]).

use serde_json::json;
use sluice_testkit::{send_json, EchoUpstream, Gateway, TestDb};
use std::time::{Duration, Instant};

#[path = "rl_support/rounds.rs"]
mod rounds;

const BIN: &str = env!("CARGO_BIN_EXE_sluice");

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_nodes_share_one_limit_in_the_database() {
    let db = TestDb::bootstrapped(BIN, "rlcluster");
    let nodes: Vec<Gateway> = (0..3)
        .map(|_| {
            db.gateway(BIN, None)
                .workers(2)
                .env("SLUICE_PG_TIMEOUT", "5000")
                .start()
        })
        .collect();
    let up = EchoUpstream::start();
    let admin = |path: &str| nodes[0].admin_url(path);
    let svc = json!({"name": "s", "url": format!("http://127.0.0.1:{}", up.port())});
    assert_eq!(
        send_json("POST", &admin("/services"), Some(svc)).await.0,
        201
    );
    let route = json!({"name": "limited", "paths": ["/limited"]});
    assert_eq!(
        send_json("POST", &admin("/services/s/routes"), Some(route))
            .await
            .0,
        201
    );
    let plugin = json!({"name": "rate-limiting", "config": {"second": 100, "minute": 1_000_000_000u64, "policy": "cluster",
        "limit_by": "header", "header_name": "x-tenant", "fault_tolerant": false}});
    let (s, e) = send_json("POST", &admin("/routes/limited/plugins"), Some(plugin)).await;
    assert_eq!(s, 201, "{e}");
    // Every node serves the plugin before the count starts.
    for n in &nodes {
        let started = Instant::now();
        while sluice_testkit::status_with(n.proxy_url("/limited"), "x-tenant", "warm-up".into())
            .await
            != 200
            || !n.log().contains("1 plugin")
        {
            assert!(started.elapsed() < Duration::from_secs(10), "{}", n.log());
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    let urls: Vec<String> = nodes.iter().map(|n| n.proxy_url("/limited")).collect();
    rounds::exact_rounds(&urls, "x-tenant", |tenant| {
        // Kong's table: one row per (identifier, period, window), holding the count let through.
        let counted = db.sql(&format!(
            "SELECT coalesce(sum(value), 0) FROM ratelimiting_metrics
             WHERE identifier = '{tenant}' AND period = 'minute'"
        ));
        async move { counted.parse().unwrap() }
    })
    .await;
}
