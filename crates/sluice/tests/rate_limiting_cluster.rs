//! rate-limiting with `policy: cluster`: three DB-mode nodes on one real PostgreSQL database (made and
//! dropped by the test) share one limit, exactly, in Kong's `ratelimiting_metrics` table (issue 20).

use serde_json::json;
use sluice_testkit::{send_json, EchoUpstream, Gateway, TestDb};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_sluice");

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_nodes_share_one_limit_in_the_database() {
    if sluice_testkit::seconds_left_in_hour() < 20 {
        tokio::time::sleep(Duration::from_secs(
            sluice_testkit::seconds_left_in_hour() + 1,
        ))
        .await;
    }
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
    let plugin = json!({"name": "rate-limiting", "config": {"hour": 100, "policy": "cluster",
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

    for round in 0..5 {
        // A tenant of its own per round: fresh counters.
        let tenant = format!("t{round}");
        let calls: Vec<_> = (0..300)
            .map(|i| {
                tokio::spawn(sluice_testkit::status_with(
                    nodes[i % 3].proxy_url("/limited"),
                    "x-tenant",
                    tenant.clone(),
                ))
            })
            .collect();
        let (mut ok, mut limited) = (0, 0);
        for c in calls {
            match c.await.unwrap() {
                200 => ok += 1,
                429 => limited += 1,
                other => panic!("round {round}: unexpected status {other}"),
            }
        }
        assert_eq!((ok, limited), (100, 200), "round {round}");
    }
    // Kong's table: one row per (identifier, period, window), holding the count of requests let through.
    let row =
        db.sql("SELECT period || '=' || value FROM ratelimiting_metrics WHERE identifier = 't0'");
    assert_eq!(row, "hour=100");
}
