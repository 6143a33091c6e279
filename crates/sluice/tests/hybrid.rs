//! Hybrid mode through the real binary on loopback: a control plane (DB-less, changed by `POST /config`)
//! pushes its config to a data plane over mutual TLS with Kong's v1 protocol; the DP serves it, keeps
//! serving when the CP is gone, and serves it again after a restart without the CP; a DP with another
//! certificate is refused.

#[path = "hybrid_support/cluster.rs"]
mod cluster;

use cluster::*;
use sluice_testkit::{client, self_signed, EchoUpstream, TestCa};
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_data_plane_serves_what_its_control_plane_pushes_and_outlives_it() {
    let up = EchoUpstream::start();
    let dir = tempfile::tempdir().unwrap();
    let cert = cert_files(dir.path(), &self_signed(&["kong_clustering"]));
    let mut cp = control_plane(&cert, &config(up.port(), &["/first"]));
    let port = cp.cluster_port();
    let mut dp = data_plane(port, &cert);

    // The first push arrives on connect.
    until(&dp, "/first", 200, Duration::from_secs(10)).await;
    assert_eq!(status(&dp, "/second").await, 404);

    // A change on the CP reaches the DP.
    post_config(&cp, config(up.port(), &["/first", "/second"])).await;
    let took = until(&dp, "/second", 200, Duration::from_secs(5)).await;
    assert!(took < Duration::from_secs(2), "propagation took {took:?}");

    // The CP lists the DP with Kong's fields; its ping after applying carries the new config's hash.
    let mut plane = serde_json::Value::Null;
    for _ in 0..100 {
        let planes: serde_json::Value = client()
            .get(cp.admin_url("/clustering/data-planes"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        plane = planes["data"][0].clone();
        if plane["config_hash"] != sluice_cluster::hash::EMPTY_CONFIG_HASH {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(plane["sync_status"], "normal", "{plane}");
    assert_eq!(plane["ip"], "127.0.0.1");
    assert_eq!(plane["version"], "3.9.1");
    assert_eq!(
        plane["config_hash"].as_str().map(str::len),
        Some(32),
        "{plane}"
    );
    assert_ne!(
        plane["config_hash"],
        sluice_cluster::hash::EMPTY_CONFIG_HASH
    );
    // Not a control plane: Kong's 400.
    let resp = client()
        .get(dp.admin_url("/clustering/data-planes"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 400);
    // A DP's Admin API is read-only: its config comes from the CP.
    let resp = client()
        .post(dp.admin_url("/config"))
        .header("content-type", "application/yaml")
        .body(config(up.port(), &["/third"]))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 400);
    assert!(resp.text().await.unwrap().contains("data plane"));
    assert_eq!(status(&dp, "/third").await, 404);
    assert_eq!(status(&dp, "/second").await, 200);

    // The CP goes away: the DP keeps serving, and serves its stored config after a restart without it
    // (stopped cleanly: the changes of the last 500 ms reach the store at the stop).
    cp.kill();
    assert_eq!(status(&dp, "/second").await, 200);
    dp.signal("TERM");
    assert!(dp
        .wait_exit(Duration::from_secs(10))
        .is_some_and(|s| s.success()));
    dp.restart();
    until(&dp, "/second", 200, Duration::from_secs(5)).await;
    assert!(
        dp.log().contains("configuration restored from the store"),
        "{}",
        dp.log()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_data_plane_with_another_certificate_is_refused() {
    let up = EchoUpstream::start();
    let dir = tempfile::tempdir().unwrap();
    let cert = cert_files(dir.path(), &self_signed(&["kong_clustering"]));
    let other_dir = tempfile::tempdir().unwrap();
    let other = cert_files(other_dir.path(), &self_signed(&["kong_clustering"]));
    let cp = control_plane(&cert, &config(up.port(), &["/first"]));
    let port = cp.cluster_port();
    let stranger = data_plane(port, &other);
    let member = data_plane(port, &cert);
    until(&member, "/first", 200, Duration::from_secs(10)).await;
    // The stranger had as long as the member, and more: no config reached it.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(status(&stranger, "/first").await, 404);
    let log = stranger.log();
    assert!(log.contains("cluster link failed"), "{log}");
    assert!(cp.log().contains("data plane link closed"), "{}", cp.log());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pki_mode_verifies_both_sides_against_the_cluster_ca() {
    let up = EchoUpstream::start();
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new("cluster ca");
    let ca_file = dir.path().join("ca.crt");
    std::fs::write(&ca_file, &ca.pem).unwrap();
    let ca_file = ca_file.display().to_string();
    let cp_cert = cert_files(dir.path(), &ca.issue(&["cp.cluster.test"]));
    let dp_cert = cert_files(dir.path(), &ca.issue(&["dp1.cluster.test"]));
    let foreign = cert_files(
        dir.path(),
        &TestCa::new("another ca").issue(&["dp2.cluster.test"]),
    );
    let pki = [
        ("SLUICE_CLUSTER_MTLS", "pki"),
        ("SLUICE_CLUSTER_CA_CERT", ca_file.as_str()),
        ("SLUICE_CLUSTER_SERVER_NAME", "cp.cluster.test"),
    ];
    let cp = control_plane_with(&cp_cert, &config(up.port(), &["/first"]), &pki);
    let port = cp.cluster_port();
    let stranger = data_plane_with(port, &foreign, &pki);
    let member = data_plane_with(port, &dp_cert, &pki);
    until(&member, "/first", 200, Duration::from_secs(10)).await;
    // A DP that expects another name for the CP refuses it.
    let misnamed = data_plane_with(
        port,
        &dp_cert,
        &[
            pki[0],
            pki[1],
            ("SLUICE_CLUSTER_SERVER_NAME", "other.cluster.test"),
        ],
    );
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(status(&stranger, "/first").await, 404);
    assert_eq!(status(&misnamed, "/first").await, 404);
    assert!(
        misnamed.log().contains("cluster link failed"),
        "{}",
        misnamed.log()
    );
}

/// A control plane that cannot bind `cluster_listen` does not start (as Kong's does not): its data planes
/// would otherwise talk TLS to whatever holds that port.
#[test]
fn a_control_plane_whose_cluster_port_is_taken_does_not_start() {
    let dir = tempfile::tempdir().unwrap();
    let cert = cert_files(dir.path(), &self_signed(&["kong_clustering"]));
    let held = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let listen = held.local_addr().unwrap().to_string();
    std::fs::write(dir.path().join("kong.yml"), config(1, &["/a"])).unwrap();
    let log_path = dir.path().join("cp.log");
    let log = std::fs::File::create(&log_path).unwrap();
    let mut child = std::process::Command::new(BIN)
        .args(["start", "--config"])
        .arg(dir.path().join("kong.yml"))
        .env("SLUICE_PREFIX", dir.path())
        .env("SLUICE_ROLE", "control_plane")
        .env("SLUICE_CLUSTER_LISTEN", &listen)
        .env("SLUICE_CLUSTER_CERT", &cert.0)
        .env("SLUICE_CLUSTER_CERT_KEY", &cert.1)
        .env("SLUICE_PROXY_LISTEN", "127.0.0.1:0")
        .env("SLUICE_ADMIN_LISTEN", "127.0.0.1:0")
        .env("SLUICE_STATUS_LISTEN", "127.0.0.1:0")
        .stdin(std::process::Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    let exit = loop {
        if let Some(exit) = child.try_wait().unwrap() {
            break exit;
        }
        if std::time::Instant::now() > deadline {
            child.kill().unwrap();
            panic!(
                "the control plane still runs: {}",
                std::fs::read_to_string(&log_path).unwrap()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let log = std::fs::read_to_string(&log_path).unwrap();
    assert!(!exit.success(), "{log}");
    assert!(
        log.contains(&format!("cluster_listen: cannot listen on {listen}")),
        "{log}"
    );
}
