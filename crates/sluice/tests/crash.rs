//! Crash safety of the config store: `kill -9` at any moment of a `POST /config` leaves, after a
//! restart from the store, the old config or the new one — whole, never a mix.

use serde_json::{json, Value};
use sluice_testkit::{client, get_json, Gateway};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_sluice");

/// A config with `routes` routes named `{tag}-{i}` and as many consumers with a key, big enough that
/// parsing and committing it take a noticeable time.
fn config(tag: &str, routes: usize) -> Vec<u8> {
    let routes: Vec<Value> = (0..routes)
        .map(|i| json!({ "name": format!("{tag}-{i}"), "paths": [format!("/{tag}/{i}")] }))
        .collect();
    let consumers: Vec<Value> = (0..routes.len())
        .map(|i| {
            json!({ "username": format!("{tag}-c{i}"),
                    "keyauth_credentials": [{ "key": format!("{tag}-key-{i}") }] })
        })
        .collect();
    serde_json::to_vec(&json!({
        "_format_version": "3.0",
        "services": [{ "name": format!("{tag}-svc"), "url": "http://127.0.0.1:9/", "routes": routes }],
        "consumers": consumers,
    }))
    .unwrap()
}

/// Sends `POST /config` on a raw socket and returns without waiting for the answer when `wait` is
/// false (the process may be killed under it).
fn post(admin: &str, body: &[u8], wait: bool) -> Option<u16> {
    let addr = admin
        .trim_start_matches("http://")
        .trim_end_matches("/config");
    let mut s = TcpStream::connect(addr).ok()?;
    let head = format!(
        "POST /config HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes()).ok()?;
    s.write_all(body).ok()?;
    if !wait {
        // Keep the socket open in a thread so the request is not aborted by a close.
        std::thread::spawn(move || {
            let mut sink = Vec::new();
            let _ = s.read_to_end(&mut sink);
        });
        return None;
    }
    let mut reply = Vec::new();
    s.read_to_end(&mut reply).ok()?;
    String::from_utf8_lossy(&reply)
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

async fn hash(gw: &Gateway) -> String {
    let (_, _, status) = get_json(&gw.admin_url("/status"), &[]).await;
    status["configuration_hash"].as_str().unwrap().to_string()
}

async fn route_exists(gw: &Gateway, name: &str) -> bool {
    let resp = client()
        .get(gw.admin_url(&format!("/routes/{name}")))
        .send()
        .await
        .unwrap();
    resp.status().as_u16() == 200
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_during_config_writes_leaves_the_old_or_the_new_config_whole() {
    const ROUTES: usize = 3000;
    const ROUNDS: u64 = 12;
    let configs = [config("a", ROUTES), config("b", ROUTES)];
    let mut gw = Gateway::builder(BIN).no_config().expect_not_ready().start();
    let admin = gw.admin_url("/config");

    // Load each once, uninterrupted: their hashes, and how long a load takes here.
    let mut hashes = Vec::new();
    let mut load_time = Duration::ZERO;
    for body in &configs {
        let started = Instant::now();
        assert_eq!(post(&admin, body, true), Some(201), "{}", gw.log());
        load_time = load_time.max(started.elapsed());
        hashes.push(hash(&gw).await);
    }
    assert_ne!(hashes[0], hashes[1]);

    let mut live = 1; // "b" was loaded last
    let mut seen = [0usize; 2];
    // A load under kills can take longer than the timed ones (a slow or busy host): when the first
    // ROUNDS all landed on one side of the commit, a second pass spreads the kills twice as wide.
    for round in 0..2 * ROUNDS {
        if round >= ROUNDS && seen[0] > 0 && seen[1] > 0 {
            break;
        }
        let next = 1 - live;
        post(&admin, &configs[next], false);
        // Spread the kill over the whole load, and a little past it (the write is at its end).
        let (pass, at) = (round / ROUNDS, round % ROUNDS);
        let spread = if pass == 0 { 1.2 } else { 2.4 };
        let delay = load_time.mul_f64((at as f64 + 0.5) / ROUNDS as f64 * spread);
        tokio::time::sleep(delay).await;
        gw.restart();

        let h = hash(&gw).await;
        let now = hashes
            .iter()
            .position(|x| *x == h)
            .unwrap_or_else(|| panic!("round {round}: unknown hash {h} after the restart"));
        // The whole of that config, and nothing of the other: first and last routes of each.
        for (i, tag) in ["a", "b"].iter().enumerate() {
            for n in [0, ROUTES - 1] {
                let name = format!("{tag}-{n}");
                assert_eq!(
                    route_exists(&gw, &name).await,
                    i == now,
                    "round {round}: route {name} with config {} live",
                    ["a", "b"][now]
                );
            }
        }
        seen[now] += 1;
        live = now;
    }
    eprintln!("load time {load_time:?}; outcomes (a, b) {seen:?}");
    // The kills landed both before and after commits (else the test proved little).
    assert!(seen[0] > 0 && seen[1] > 0, "outcomes {seen:?}");
}
