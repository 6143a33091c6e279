//! Separate hosts for cluster tests: a network namespace per host, all on one LAN, made by the test and
//! always removed (on drop, also when an assertion fails).
//!
//! ```text
//!                 lan namespace: bridge
//!      ┌──────────────┬───────┴──────┬──────────────┐
//!    veth           veth           veth           veth
//!  this namespace   host 1         host 2   ...   host n
//!  10.213.N.254     10.213.N.1     10.213.N.2     10.213.N.n
//! ```
//!
//! `N` and the names come from the process id and a counter, so parallel runs (and several LANs in one
//! process) do not collide; `N` skips a /24 this namespace already has an address in. What a process
//! killed before its drop left is removed by the next `Lan` ([`stale`]). The LAN is one /24 of 10.213.0.0/16, a range kept for these tests; nothing
//! global changes (no `ip_forward`, no sysctl). A host's link can be cut and healed, and packets on it
//! dropped at random with nftables. Needs root (or CAP_NET_ADMIN and CAP_SYS_ADMIN), iproute2 and `nft`.

mod stale;

use std::net::IpAddr;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

/// The nftables table that [`Lan::drop_randomly`] adds in a host's namespace.
const LOSS_TABLE: &str = "sluice_test_loss";

/// A LAN of hosts, each its own network namespace; this namespace is on it too.
pub struct Lan {
    tag: String,
    lan_ns: String,
    /// This namespace's address on the LAN.
    root_ip: IpAddr,
    /// The veth end in this namespace (deleting it deletes its peer).
    root_link: String,
    hosts: Vec<Host>,
}

/// One host: its namespace, its address and its end of its link.
pub struct Host {
    pub name: String,
    pub ns: String,
    pub ip: IpAddr,
    link: String,
}

/// Runs `ip` with `args`; Err(what it said) when it fails.
fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| format!("cannot run `ip` (install iproute2): {e}"))?;
    if out.status.success() {
        return Ok(());
    }
    Err(format!(
        "ip {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr).trim()
    ))
}

/// Runs `ip`, panicking with what it said.
fn must(args: &[&str]) {
    if let Err(e) = ip(args) {
        panic!("{e}");
    }
}

/// The first 10.213.N (from N = `start` mod 250 + 1 on) whose /24 no address of this namespace is in, so
/// that two LANs never route the same subnet.
fn free_net(start: u32) -> String {
    for i in 0..250 {
        let net = format!("10.213.{}", (start + i) % 250 + 1);
        let used = Command::new("ip")
            .args(["-o", "-4", "addr", "show", "to", &format!("{net}.0/24")])
            .output()
            .is_ok_and(|out| !out.stdout.is_empty());
        if !used {
            return net;
        }
    }
    panic!("every /24 of 10.213.0.0/16 is in use here");
}

impl Lan {
    /// Makes the LAN and one namespace per name in `hosts` (at most 250), at 10.213.N.1, .2, ... in
    /// that order. Panics with a clear message when network namespaces cannot be made here.
    pub fn new(hosts: &[&str]) -> Lan {
        static MADE: AtomicU32 = AtomicU32::new(0);
        assert!(hosts.len() <= 250, "at most 250 hosts on a /24");
        let (pid, k) = (std::process::id(), MADE.fetch_add(1, Ordering::Relaxed));
        // At most 15 characters in a link's name: "sl4194304_9h249".
        let tag = format!("sl{pid}_{}", k % 10);
        stale::sweep();
        let net = free_net(pid * 7 + k);
        let mut lan = Lan {
            lan_ns: format!("{tag}-lan"),
            root_ip: format!("{net}.254").parse().expect("address"),
            root_link: format!("{tag}r"),
            hosts: Vec::new(),
            tag,
        };
        if let Err(e) = ip(&["netns", "add", &lan.lan_ns]) {
            panic!(
                "network namespace tests need root (CAP_NET_ADMIN, CAP_SYS_ADMIN) and iproute2, and \
                 `ip netns` failed here: {e}"
            );
        }
        // From here on, dropping `lan` (also on a panic) removes whatever was made.
        lan.build(&net, hosts);
        lan
    }

    fn build(&mut self, net: &str, hosts: &[&str]) {
        let lan = self.lan_ns.clone();
        must(&["-n", &lan, "link", "add", "br0", "type", "bridge"]);
        must(&["-n", &lan, "link", "set", "br0", "up"]);
        let (root, peer) = (self.root_link.clone(), format!("{}R", self.tag));
        self.plug(&root, &peer);
        must(&["addr", "add", &format!("{}/24", self.root_ip), "dev", &root]);
        must(&["link", "set", &root, "up"]);
        for (i, name) in hosts.iter().enumerate() {
            let host = Host {
                name: name.to_string(),
                ns: format!("{}-{name}", self.tag),
                ip: format!("{net}.{}", i + 1).parse().expect("address"),
                link: format!("{}h{i}", self.tag),
            };
            must(&["netns", "add", &host.ns]);
            self.hosts.push(host);
            let host = &self.hosts[i];
            self.plug(&host.link, &format!("{}b{i}", self.tag));
            must(&["link", "set", &host.link, "netns", &host.ns]);
            let ns = host.ns.as_str();
            must(&[
                "-n",
                ns,
                "addr",
                "add",
                &format!("{}/24", host.ip),
                "dev",
                &host.link,
            ]);
            must(&["-n", ns, "link", "set", &host.link, "up"]);
            must(&["-n", ns, "link", "set", "lo", "up"]);
        }
    }

    /// A veth pair `end` ↔ `port`, with `port` on the LAN's bridge.
    fn plug(&self, end: &str, port: &str) {
        must(&["link", "add", end, "type", "veth", "peer", "name", port]);
        must(&["link", "set", port, "netns", &self.lan_ns]);
        let lan = self.lan_ns.as_str();
        must(&["-n", lan, "link", "set", port, "master", "br0", "up"]);
    }

    /// This namespace's address on the LAN (for servers the hosts reach, such as an upstream).
    pub fn root_ip(&self) -> IpAddr {
        self.root_ip
    }

    /// The host named `name`.
    pub fn host(&self, name: &str) -> &Host {
        self.hosts
            .iter()
            .find(|h| h.name == name)
            .unwrap_or_else(|| panic!("no host {name} on this LAN"))
    }

    /// Cuts `name`'s link (its end goes down): nothing reaches it or leaves it until [`Lan::heal`].
    pub fn cut(&self, name: &str) {
        let host = self.host(name);
        must(&["-n", &host.ns, "link", "set", &host.link, "down"]);
    }

    /// Brings `name`'s link back up.
    pub fn heal(&self, name: &str) {
        let host = self.host(name);
        must(&["-n", &host.ns, "link", "set", &host.link, "up"]);
    }

    /// Drops `percent` (at most 99) of the packets `name` receives and of those it sends, at random
    /// (nftables in its namespace: `numgen random mod 100 < percent drop`). Replaces an earlier rate.
    pub fn drop_randomly(&self, name: &str, percent: u32) {
        self.stop_dropping(name);
        let chain = |hook: &str| {
            format!(
                "chain {hook} {{ type filter hook {hook} priority 0; \
                 numgen random mod 100 < {percent} counter drop; }}"
            )
        };
        let rules = format!(
            "table inet {LOSS_TABLE} {{\n{}\n{}\n}}",
            chain("input"),
            chain("output")
        );
        let host = self.host(name);
        if let Err(e) = ip(&["netns", "exec", &host.ns, "nft", &rules]) {
            panic!("{e} (is nftables installed?)");
        }
    }

    /// How many packets the rules of [`Lan::drop_randomly`] dropped on `name` so far.
    pub fn dropped(&self, name: &str) -> u64 {
        let host = self.host(name);
        let out = Command::new("ip")
            .args([
                "netns", "exec", &host.ns, "nft", "list", "table", "inet", LOSS_TABLE,
            ])
            .output()
            .expect("running nft");
        let listing = String::from_utf8_lossy(&out.stdout);
        let mut words = listing.split_whitespace();
        let mut dropped = 0;
        while let Some(word) = words.next() {
            if word == "packets" {
                dropped += words
                    .next()
                    .and_then(|n| n.parse::<u64>().ok())
                    .unwrap_or(0);
            }
        }
        dropped
    }

    /// Removes the drop rules of [`Lan::drop_randomly`] (none is fine).
    pub fn stop_dropping(&self, name: &str) {
        let host = self.host(name);
        let _ = Command::new("ip")
            .args(["netns", "exec", &host.ns, "nft", "delete", "table", "inet"])
            .arg(LOSS_TABLE)
            .stderr(std::process::Stdio::null())
            .status();
    }
}

impl Drop for Lan {
    fn drop(&mut self) {
        // A namespace's removal removes the links in it, and a veth end goes with its peer.
        let _ = ip(&["link", "del", &self.root_link]);
        for host in &self.hosts {
            let _ = ip(&["netns", "del", &host.ns]);
            // Only there when making the host failed before its end moved into its namespace.
            let _ = Command::new("ip")
                .args(["link", "del", &host.link])
                .stderr(std::process::Stdio::null())
                .status();
        }
        let _ = ip(&["netns", "del", &self.lan_ns]);
    }
}
