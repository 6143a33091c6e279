//! Several nodes on one real PostgreSQL database: a write on one node is served by the others within
//! milliseconds (LISTEN/NOTIFY, then only the changed entities are read); a node cut off from the database
//! keeps serving, answers writes with 503, restarts from its store, and catches up when the database returns
//! (the outage is a TCP relay of the test's own between the node and PostgreSQL). Target health set by
//! hand on one node reaches the others.

mod support;

use serde_json::json;
use sluice_testkit::{client, send_json, EchoUpstream, Gateway, PgRelay, TestDb};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_sluice");

/// Polls `gw`'s `GET /upstreams/{upstream}/health` until `target` reports `want`; panics after 10 s.
async fn until_health(gw: &Gateway, upstream: &str, target: &str, want: &str) {
    let started = Instant::now();
    loop {
        let now = support::health(gw, upstream).await;
        if now.iter().any(|(t, h)| t == target && h == want) {
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{target} never became {want}: {now:?}\n{}",
            gw.log()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

async fn status(url: String) -> u16 {
    match client().get(url).send().await {
        Ok(r) => r.status().as_u16(),
        Err(_) => 0,
    }
}

/// Polls `url` until it answers 200; the time that took, or None after `limit`.
async fn until_served(url: String, limit: Duration) -> Option<Duration> {
    let started = Instant::now();
    while started.elapsed() < limit {
        if status(url.clone()).await == 200 {
            return Some(started.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    None
}

/// Two nodes on a database of their own, and a service `e` written on A. B logs each notified, applied and
/// read version (shown if a route never reaches it).
async fn two_nodes_with_a_service(name: &str) -> (TestDb, Gateway, Gateway, EchoUpstream) {
    let db = TestDb::bootstrapped(BIN, name);
    let a = db.gateway(BIN, None).start();
    let b = db
        .gateway(BIN, None)
        .env("SLUICE_LOG_LEVEL", "debug")
        .start();
    let echo = EchoUpstream::start();
    let url = format!("http://{}", echo.addr());
    let (s, _) = send_json(
        "POST",
        &a.admin_url("/services"),
        Some(json!({"name": "e", "url": url})),
    )
    .await;
    assert_eq!(s, 201);
    (db, a, b, echo)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_on_one_node_is_served_by_the_other() {
    let (_db, a, b, _echo) = two_nodes_with_a_service("prop").await;
    let mut took = Vec::new();
    for i in 0..100 {
        let body = json!({"name": format!("r{i}"), "paths": [format!("/p{i}")]});
        let (s, r) = send_json("POST", &a.admin_url("/services/e/routes"), Some(body)).await;
        assert_eq!(s, 201, "{r}");
        let t = until_served(b.proxy_url(&format!("/p{i}")), Duration::from_secs(10)).await;
        took.push(t.unwrap_or_else(|| panic!("route {i} never reached node B:\n{}", b.log())));
    }
    // The other way, and a delete: B's write is gone from A.
    let (s, _) = send_json("DELETE", &b.admin_url("/routes/r0"), None).await;
    assert_eq!(s, 204);
    let started = Instant::now();
    while status(a.proxy_url("/p0")).await != 404 {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the delete never reached A"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // Each change was patched into the config before the live one, or into a copy of the live one:
    // either way both nodes end up with every route but the deleted one.
    for gw in [&a, &b] {
        for i in 1..100 {
            assert_eq!(status(gw.proxy_url(&format!("/p{i}"))).await, 200, "/p{i}");
        }
        let (_, routes) = send_json("GET", &gw.admin_url("/routes?size=1000"), None).await;
        assert_eq!(
            routes["data"].as_array().map(Vec::len),
            Some(99),
            "{routes}"
        );
    }
    took.sort();
    println!(
        "propagation A→B over 100 writes: p50 {:?}, p99 {:?}, max {:?}",
        took[49], took[98], took[99]
    );
}

/// Concurrent writes on A notify B in quick succession, while B is still applying an earlier one: the
/// notifications queued behind it must all be covered by B's next read (B once applied the first queued
/// version, found it already applied, and dropped the newer ones queued behind it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_writes_all_reach_the_other_node() {
    let (_db, a, b, _echo) = two_nodes_with_a_service("burst").await;
    for round in 0..5 {
        let writes = (0..12).map(|i| {
            let url = a.admin_url("/services/e/routes");
            let body = json!({"paths": [format!("/b{round}-{i}")]});
            tokio::spawn(async move { send_json("POST", &url, Some(body)).await.0 })
        });
        for w in writes.collect::<Vec<_>>() {
            assert_eq!(w.await.unwrap(), 201);
        }
        // The last path of the round is the newest version only if every write landed; check them all.
        for i in 0..12 {
            let path = format!("/b{round}-{i}");
            let served = until_served(b.proxy_url(&path), Duration::from_secs(10)).await;
            assert!(
                served.is_some(),
                "{path} never reached node B:\n{}",
                b.log()
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_outlives_a_database_outage() {
    let db = TestDb::bootstrapped(BIN, "outage");
    let relay = PgRelay::to_postgres();
    let direct = db.gateway(BIN, None).start();
    let mut cut_off = db.gateway(BIN, Some(relay.port)).start();
    let echo = EchoUpstream::start();
    let url = format!("http://{}", echo.addr());
    let (s, _) = send_json(
        "POST",
        &direct.admin_url("/services"),
        Some(json!({"name": "e", "url": url})),
    )
    .await;
    assert_eq!(s, 201);
    let route = |p: &str| json!({"paths": [p]});
    assert_eq!(
        send_json(
            "POST",
            &direct.admin_url("/services/e/routes"),
            Some(route("/a"))
        )
        .await
        .0,
        201
    );
    let served = until_served(cut_off.proxy_url("/a"), Duration::from_secs(20)).await;
    assert!(
        served.is_some(),
        "node behind the relay:\n{}",
        cut_off.log()
    );

    let reachable = |gw: &Gateway| {
        let url = gw.admin_url("/status");
        async move { send_json("GET", &url, None).await.1["database"]["reachable"].clone() }
    };
    assert_eq!(reachable(&cut_off).await, json!(true));
    relay.cut();
    // Writes through the cut-off node fail clearly; its proxy keeps serving.
    let (s, e) = send_json(
        "POST",
        &cut_off.admin_url("/consumers"),
        Some(json!({"username": "x"})),
    )
    .await;
    assert_eq!(s, 503, "{e}");
    assert!(
        e["message"]
            .as_str()
            .unwrap_or_default()
            .contains("database"),
        "{e}"
    );
    assert_eq!(status(cut_off.proxy_url("/a")).await, 200);
    let started = Instant::now();
    while reachable(&cut_off).await != json!(false) {
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "/status still says reachable"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    // A change made meanwhile, and a restart while the database is still unreachable: the node serves
    // what its store kept.
    assert_eq!(
        send_json(
            "POST",
            &direct.admin_url("/services/e/routes"),
            Some(route("/b"))
        )
        .await
        .0,
        201
    );
    cut_off.restart();
    assert_eq!(
        status(cut_off.proxy_url("/a")).await,
        200,
        "{}",
        cut_off.log()
    );
    assert_eq!(status(cut_off.proxy_url("/b")).await, 404);

    relay.restore();
    let caught_up = until_served(cut_off.proxy_url("/b"), Duration::from_secs(15)).await;
    assert!(
        caught_up.is_some(),
        "no catch-up after the outage:\n{}",
        cut_off.log()
    );
    let (s, _) = send_json(
        "POST",
        &cut_off.admin_url("/consumers"),
        Some(json!({"username": "x"})),
    )
    .await;
    assert_eq!(s, 201);
}

/// Kong broadcasts target health set by hand to every node (its cluster events): so does Sluice, through
/// a `NOTIFY` of its own, both ways.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn target_health_set_on_one_node_reaches_the_other() {
    let db = TestDb::bootstrapped(BIN, "health");
    let a = db.gateway(BIN, None).start();
    let b = db
        .gateway(BIN, None)
        .env("SLUICE_LOG_LEVEL", "debug")
        .start();
    let (one, two) = (EchoUpstream::named("one"), EchoUpstream::named("two"));
    let checks = json!({"passive": {"unhealthy": {"http_failures": 2}}});
    let (s, e) = send_json(
        "PUT",
        &a.admin_url("/upstreams/on"),
        Some(json!({"healthchecks": checks})),
    )
    .await;
    assert_eq!(s, 200, "{e}");
    let (t1, t2) = (
        format!("127.0.0.1:{}", one.port()),
        format!("127.0.0.1:{}", two.port()),
    );
    for t in [&t1, &t2] {
        let (s, e) = send_json(
            "POST",
            &a.admin_url("/upstreams/on/targets"),
            Some(json!({"target": t})),
        )
        .await;
        assert_eq!(s, 201, "{e}");
    }
    let service = json!({"name": "s", "host": "on"});
    let (s, e) = send_json("POST", &a.admin_url("/services"), Some(service)).await;
    assert_eq!(s, 201, "{e}");
    let route = json!({"paths": ["/on"]});
    let (s, e) = send_json("POST", &a.admin_url("/services/s/routes"), Some(route)).await;
    assert_eq!(s, 201, "{e}");
    assert!(
        until_served(b.proxy_url("/on"), Duration::from_secs(10))
            .await
            .is_some(),
        "{}",
        b.log()
    );
    until_health(&b, "on", &t2, "HEALTHY").await;

    // Set on A: B takes `two` out of rotation too.
    let (s, e) = send_json(
        "PUT",
        &a.admin_url(&format!("/upstreams/on/targets/{t2}/unhealthy")),
        None,
    )
    .await;
    assert_eq!(s, 204, "{e}");
    until_health(&b, "on", &t2, "UNHEALTHY").await;
    for _ in 0..6 {
        assert_eq!(support::hit(&b, "/on", &[]).await, (200, "one".to_string()));
    }
    // Set back on B (by the target's id): A follows.
    let (_, listed) = send_json("GET", &b.admin_url("/upstreams/on/targets"), None).await;
    let id = listed["data"]
        .as_array()
        .and_then(|d| d.iter().find(|t| t["target"] == json!(t2)))
        .and_then(|t| t["id"].as_str())
        .unwrap_or_else(|| panic!("{listed}"))
        .to_string();
    until_health(&a, "on", &t2, "UNHEALTHY").await;
    let (s, e) = send_json(
        "PUT",
        &b.admin_url(&format!("/upstreams/on/targets/{id}/healthy")),
        None,
    )
    .await;
    assert_eq!(s, 204, "{e}");
    until_health(&a, "on", &t2, "HEALTHY").await;
    let mut names = Vec::new();
    for _ in 0..6 {
        names.push(support::hit(&a, "/on", &[]).await.1);
    }
    assert!(names.contains(&"two".to_string()), "{names:?}");
}
