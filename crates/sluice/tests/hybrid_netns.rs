//! Hybrid mode on separate hosts (issue 19): a control plane and data planes of the real binary, each in
//! its own network namespace on one LAN ([`sluice_testkit::Lan`]; needs root), the test's echo upstream on
//! this namespace's LAN address. On one cluster of a CP and three DPs, in order:
//! - propagation: a change posted to the CP reaches every DP;
//! - a partition: a DP's link is cut, a change is made meanwhile, the link heals: the DP catches up, and
//!   the others had the change all along;
//! - packet loss: 10% of a DP's packets are dropped at random (nftables); changes still arrive;
//! - a CP outage: the DPs keep serving, a DP restarted meanwhile serves its stored config, and all of them
//!   reconnect when the CP is back and get its changes.
//!
//! On LANs of their own, refusals and what both sides log: a DP with another certificate, DPs whose
//! `cluster_max_payload` the CP's config exceeds (compressed, or once inflated), and a CP whose own
//! `cluster_max_payload` its config exceeds (it sends nothing, as Kong's CP).

#[path = "hybrid_support/cluster.rs"]
mod cluster;
#[path = "hybrid_support/hosts.rs"]
mod hosts;

use cluster::*;
use hosts::{log_line, Site};
use sluice_testkit::{get_json, self_signed, Gateway};
use std::time::{Duration, Instant};

/// Waits until `path` answers `want` on every DP; the time it took.
async fn everywhere(dps: &[Gateway], path: &str, want: u16, within: Duration) -> Duration {
    let started = Instant::now();
    for dp in dps {
        until(dp, path, want, within).await;
    }
    started.elapsed()
}

/// The addresses the CP lists its data planes at (`GET /clustering/data-planes`).
async fn listed_ips(cp: &Gateway) -> Vec<String> {
    let (_, _, planes) = get_json(&cp.admin_url("/clustering/data-planes"), &[]).await;
    let mut ips: Vec<String> = planes["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["ip"].as_str().unwrap_or_default().to_string())
        .collect();
    ips.sort();
    ips
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changes_reach_data_planes_on_other_hosts_through_partitions_loss_and_outages() {
    let site = Site::new(&["cp", "dp1", "dp2", "dp3"]);
    let mut cp = site.control_plane(&["/a"], &[]);
    let mut dps: Vec<Gateway> = ["dp1", "dp2", "dp3"]
        .iter()
        .map(|name| site.data_plane(name, &site.cert, &[]))
        .collect();
    everywhere(&dps, "/a", 200, Duration::from_secs(10)).await;
    let ips: Vec<String> = ["dp1", "dp2", "dp3"].map(|n| site.ip(n)).into();
    assert_eq!(listed_ips(&cp).await, ips, "each DP from its own host");

    // Propagation.
    post_config(&cp, site.yaml(&["/a", "/b"])).await;
    let took = everywhere(&dps, "/b", 200, Duration::from_secs(5)).await;
    assert!(took < Duration::from_secs(2), "propagation took {took:?}");

    // A partition: dp3 is cut off while a change is made; the others get it meanwhile.
    site.lan.cut("dp3");
    assert!(!site.answers("dp3", dps[2].proxy_port()), "dp3 is cut off");
    post_config(&cp, site.yaml(&["/a", "/b", "/c"])).await;
    everywhere(&dps[..2], "/c", 200, Duration::from_secs(5)).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(
        !site.answers("dp3", dps[2].proxy_port()),
        "dp3 is still cut off"
    );
    site.lan.heal("dp3");
    let took = everywhere(&dps[2..], "/c", 200, Duration::from_secs(15)).await;
    let links = plain_log(&dps[2])
        .matches("connected to the control plane")
        .count();
    eprintln!("dp3 caught up {took:?} after the link healed, with {links} link(s) in all");
    everywhere(&dps[..2], "/c", 200, Duration::ZERO).await;
    for dp in &dps[..2] {
        let log = plain_log(dp);
        let links = log.matches("connected to the control plane").count();
        assert_eq!(links, 1, "the others kept their links:\n{log}");
    }

    // Packet loss on dp2's link: every change still arrives.
    site.lan.drop_randomly("dp2", 10);
    let mut paths = vec!["/a"];
    for path in ["/d1", "/d2", "/d3"] {
        paths.push(path);
        post_config(&cp, site.yaml(&paths)).await;
        let took = everywhere(&dps, path, 200, Duration::from_secs(20)).await;
        eprintln!("{path} reached every DP in {took:?} with loss on dp2");
    }
    let dropped = site.lan.dropped("dp2");
    site.lan.stop_dropping("dp2");
    assert!(dropped > 0, "no packet was dropped");
    eprintln!("{dropped} packets dropped on dp2");

    // The CP goes down right after a change: the DPs keep serving, and dp1 restarted meanwhile serves its
    // store. A DP writes its deltas to its store in batches (every 500 ms, `loader::STORE_BATCH`), and at
    // once when its link to the CP ends: the SIGKILL restart comes after the link's end is logged, well
    // within the batch of /d4's delta, so /d4 is there only if the link's end wrote it.
    paths.push("/d4");
    post_config(&cp, site.yaml(&paths)).await;
    everywhere(&dps, "/d4", 200, Duration::from_secs(20)).await;
    let ended = links_ended(&dps[0]);
    cp.kill();
    until_link_ended(&dps[0], ended, Duration::from_secs(10)).await;
    dps[0].restart();
    until(&dps[0], "/d4", 200, Duration::from_secs(5)).await;
    assert_eq!(status(&dps[0], "/d3").await, 200);
    let log = plain_log(&dps[0]);
    assert!(
        log.contains("configuration restored from the store"),
        "{log}"
    );
    assert!(!log.contains("connected to the control plane"), "{log}");

    // The CP is back: the DPs reconnect (after their backoff) and get its changes.
    cp.restart();
    post_config(&cp, site.yaml(&["/a", "/e"])).await;
    let took = everywhere(&dps, "/e", 200, Duration::from_secs(20)).await;
    eprintln!("the DPs had the CP's change {took:?} after it came back");
    for dp in &dps[1..] {
        let log = plain_log(dp);
        assert!(
            log.matches("connected to the control plane").count() >= 2,
            "{log}"
        );
    }
    for path in ["/d3", "/d4"] {
        assert_eq!(status(&dps[0], path).await, 404);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_data_planes_say_why_on_both_sides() {
    let site = Site::new(&["cp", "stranger", "small", "tiny"]);
    let routes: Vec<String> = (0..40).map(|i| format!("/route-{i}")).collect();
    let paths: Vec<&str> = routes.iter().map(String::as_str).collect();
    let cp = site.control_plane(&paths, &[]);
    let other = cert_files(site.dir.path(), &self_signed(&["kong_clustering"]));
    let stranger = site.data_plane("stranger", &other, &[]);
    // The config's frame is about 2 KB and inflates to more: "small" takes the frame and refuses what
    // it inflates to, "tiny" refuses the frame itself.
    let limits = [("small", "4096"), ("tiny", "1000")];
    let limited: Vec<Gateway> = limits
        .iter()
        .map(|(host, limit)| {
            let env = [("SLUICE_CLUSTER_MAX_PAYLOAD", *limit)];
            site.data_plane(host, &site.cert, &env)
        })
        .collect();

    // Another certificate: the TLS handshake fails, and both sides name it.
    let (ip, within) = (site.ip("stranger"), Duration::from_secs(10));
    let line = log_line(&stranger, &["cluster link failed"], within).await;
    assert!(line.contains("not this cluster's certificate"), "{line}");
    let line = log_line(&cp, &["data plane link closed", &ip], within).await;
    assert!(line.contains("certificate"), "{line}");
    assert_eq!(status(&stranger, "/route-0").await, 404);

    // A config over a DP's cluster_max_payload: both sides say so.
    for ((host, limit), dp) in limits.iter().zip(&limited) {
        let (ip, limit) = (
            site.ip(host),
            format!("cluster_max_payload of {limit} bytes"),
        );
        log_line(dp, &["ERROR", &limit], within).await;
        log_line(
            &cp,
            &["ERROR", "data plane link closed", &ip, &limit],
            within,
        )
        .await;
        assert_eq!(status(dp, "/route-0").await, 404);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_control_plane_sends_nothing_over_its_cluster_max_payload_and_says_so() {
    let site = Site::new(&["cp", "dp"]);
    // Over the frame of 40 routes (about 2 KB) and the DP's basic_info, under the frame of 400 routes.
    let routes: Vec<String> = (0..400).map(|i| format!("/route-{i}")).collect();
    let paths: Vec<&str> = routes.iter().map(String::as_str).collect();
    let cp = site.control_plane(&paths, &[("SLUICE_CLUSTER_MAX_PAYLOAD", "8000")]);
    let dp = site.data_plane("dp", &site.cert, &[]);
    let (limit, within) = (
        "configuration over the control plane's cluster_max_payload of 8000 bytes",
        Duration::from_secs(10),
    );
    let line = log_line(&cp, &["ERROR", &site.ip("dp"), limit], within).await;
    assert!(line.contains("not sent"), "{line}");
    let line = log_line(&dp, &["ERROR", limit], within).await;
    assert!(line.contains("closed the link (1009)"), "{line}");
    assert_eq!(status(&dp, "/route-0").await, 404);
}
