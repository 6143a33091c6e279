//! The cluster of `hybrid_netns.rs` on separate hosts: a [`Lan`] of network namespaces, the echo upstream on
//! this namespace's LAN address, the cluster certificate, and nodes of the real binary started on the
//! hosts (the CP on the host named `cp`, listening for DPs on port 8005).

use super::cluster::{cert_files, config_at, node, plain_log, BIN};
use sluice_testkit::{self_signed, EchoUpstream, Gateway, Lan};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

const CLUSTER_PORT: u16 = 8005;

/// Everything a test's nodes need; the LAN is dropped last (after the gateways of the test, which are
/// locals declared after the site).
pub struct Site {
    pub up: EchoUpstream,
    pub cert: (String, String),
    pub dir: tempfile::TempDir,
    pub lan: Lan,
}

impl Site {
    pub fn new(hosts: &[&str]) -> Site {
        let lan = Lan::new(hosts);
        let up = EchoUpstream::named_at("echo", SocketAddr::new(lan.root_ip(), 0));
        let dir = tempfile::tempdir().unwrap();
        let cert = cert_files(dir.path(), &self_signed(&["kong_clustering"]));
        Site { up, cert, dir, lan }
    }

    /// The address of the host `name`.
    pub fn ip(&self, name: &str) -> String {
        self.lan.host(name).ip.to_string()
    }

    /// A config of a route per path to the echo upstream.
    pub fn yaml(&self, paths: &[&str]) -> String {
        config_at(&self.lan.root_ip().to_string(), self.up.port(), paths)
    }

    fn builder(&self, host: &str) -> sluice_testkit::GatewayBuilder {
        let host = self.lan.host(host);
        Gateway::builder(BIN).netns(&host.ns, host.ip)
    }

    /// The CP on the host `cp`, serving a route per path, with further settings.
    pub fn control_plane(&self, paths: &[&str], env: &[(&str, &str)]) -> Gateway {
        let listen = format!("{}:{CLUSTER_PORT}", self.ip("cp"));
        let role = [
            ("SLUICE_ROLE", "control_plane"),
            ("SLUICE_CLUSTER_LISTEN", &listen),
        ];
        let builder = self.builder("cp").config_yaml(&self.yaml(paths));
        node(builder, &self.cert, &role, env)
    }

    /// A DP on the host `name` with the certificate `cert` and further settings.
    pub fn data_plane(&self, name: &str, cert: &(String, String), env: &[(&str, &str)]) -> Gateway {
        let cp = format!("{}:{CLUSTER_PORT}", self.ip("cp"));
        let role = [
            ("SLUICE_ROLE", "data_plane"),
            ("SLUICE_CLUSTER_CONTROL_PLANE", &cp),
        ];
        let builder = self.builder(name).no_config().expect_not_ready();
        node(builder, cert, &role, env)
    }

    /// Whether the host `name` accepts a connection on `port` within half a second.
    pub fn answers(&self, name: &str, port: u16) -> bool {
        let addr = SocketAddr::new(self.lan.host(name).ip, port);
        std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(500)).is_ok()
    }
}

/// Waits for a line of `gw`'s log that holds every one of `words`; the line.
pub async fn log_line(gw: &Gateway, words: &[&str], within: Duration) -> String {
    let started = Instant::now();
    loop {
        let log = plain_log(gw);
        let found = log.lines().find(|l| words.iter().all(|w| l.contains(w)));
        if let Some(line) = found {
            eprintln!("{line}");
            return line.to_string();
        }
        assert!(
            started.elapsed() < within,
            "no line with {words:?} in {within:?}:\n{log}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
